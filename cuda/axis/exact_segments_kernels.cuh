// exact_segments_kernels.cuh -- variant "exact" along axes (issue 41), compiled on first use (abi/jit.h:
// GR_JIT_EXACT_SEGMENTS; the host half is axis/reduce_segments_exact.cu): the correctly rounded sum, mean, nansum
// and nanmean of every (i0, i1) segment of the axis layout (gpureduce.h), where= and initial= included.  Each
// segment's sum is kept exactly in integers (primitives/exact_sum.cuh) and rounded once, so a segment's bits do
// not depend on how many segments are reduced beside it, how it was cut among threads, or on the layout: a row
// of a batch, the same row alone and the whole-array kernel's sum of it are one value.
//
// Two mappings of the work, a "unit" being a segment or, where few segments cannot fill the GPU, a chunk of one:
//   exact_rows_kernel     a warp per unit, its lanes along r (coalesced where r is the unit stride: row sums)
//   exact_columns_kernel  a thread per unit, adjacent threads adjacent i1 (coalesced where i1 is the unit
//                         stride: the column sums of a C-ordered matrix)
// Each thread keeps an ExactWindow over its elements, its spills in its own ExactColumn of shared memory (as the
// whole-array kernel, variants/exact_sum_kernels.cuh).  A unit that is a whole segment rounds its sum and writes
// it; a chunk adds its digits to the segment's in the workspace (integer atomics: any order) and the last chunk
// of the segment to finish rounds them.
#pragma once
#include "variants/exact_sum_kernels.cuh"

namespace gr {

// The layout as the kernels read it (gr_segments, strides in elements), i1 the kept axis the columns kernel
// spreads over adjacent threads; and how r is cut: `chunk` elements a unit, `chunks` units a segment (1: the
// unit is the segment, and the workspace is not read).
struct ExactSegments {
    int64_t c0, c1;
    int64_t is0, is1, ir;
    int64_t ms0, ms1, mr;
    int64_t os0, os1;
    int64_t R;
    int64_t chunk, chunks;
};

// A segment's words in the workspace of a chunked launch: its digits, the flags, the count of elements taken.
template <class T>
struct ExactSegmentWords {
    static constexpr int kFlags = ExactFormat<T>::kDigits, kTaken = kFlags + 1, kCount = kTaken + 1;
};

#ifndef __CUDACC_RTC__
// The name expression of kernel `columns` (else the rows kernel) of input dtype `d` and operator `op` (one of
// GR_OPS_EXACT_KERNEL) in the program: what reduce_segments_exact.cu launches and `warm` compiles.
inline void exact_segments_kernel_name(bool columns, gr_dtype d, gr_op op, char *buf, size_t size) {
    char type[64];
    dtype_type_name(d, type, sizeof type);
    std::snprintf(buf, size, "gr::exact_%s_kernel<%s, (gr_op)%d>", columns ? "columns" : "rows", type, int(op));
}
#endif

// The operator's rounding of a segment's digits into *out: the sum, or the mean over the elements taken (nanmean
// counted none of its NaNs); the nan forms drop the NaN flag (a NaN added nothing to the digits), but an
// `initial` that is NaN still makes the sum NaN, as NumPy's nansum(..., initial=nan).
template <class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_write(ExactDigits<T> &d, uint64_t taken, bool nan_initial, In *out) {
    using Target = typename ExactInput<In>::Target;
    if constexpr (kOp == GR_OP_NANSUM || kOp == GR_OP_NANMEAN) d.flags &= ~unsigned(kExactNaN);
    if (nan_initial) d.flags |= kExactNaN;
    if constexpr (kOp == GR_OP_MEAN || kOp == GR_OP_NANMEAN) *out = d.template round_quotient<In, Target>(taken);
    else *out = d.template round<In, Target>();
}

// A chunk's normalized digits, flags and count into its segment's words; whether it was the segment's last chunk
// to do so (which then reads the total: the fences order every chunk's adds before its count).
template <class T>
__device__ __forceinline__ bool exact_add_chunk(const ExactDigits<T> &d, uint64_t taken, int64_t *words,
                                                unsigned *done, int64_t chunks) {
    using W = ExactSegmentWords<T>;
    for (int k = 0; k < ExactFormat<T>::kDigits; k++)
        if (d.digit[k]) atomicAdd(reinterpret_cast<unsigned long long *>(&words[k]), (unsigned long long)d.digit[k]);
    if (d.flags) atomicOr(reinterpret_cast<unsigned long long *>(&words[W::kFlags]), (unsigned long long)d.flags);
    if (taken) atomicAdd(reinterpret_cast<unsigned long long *>(&words[W::kTaken]), (unsigned long long)taken);
    __threadfence();
    const bool last = atomicAdd(done, 1u) == unsigned(chunks - 1);
    if (last) __threadfence();
    return last;
}

// The segment's total, read back by its last chunk.
template <class T>
__device__ __forceinline__ uint64_t exact_read_segment(ExactDigits<T> &d, const int64_t *words) {
    using W = ExactSegmentWords<T>;
    for (int k = 0; k < ExactFormat<T>::kDigits; k++) d.digit[k] = __ldcg(&words[k]);
    d.flags = unsigned(__ldcg(&words[W::kFlags]));
    return uint64_t(__ldcg(&words[W::kTaken]));
}

// A unit's sum (its flags set) rounded into *out where the unit is all of segment s; else added to the segment's
// words, and rounded from them by the segment's last chunk to finish.  One thread.
template <class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_finish_unit(ExactDigits<T> &sum, uint64_t taken, bool nan_initial,
                                                  const ExactSegments &g, int64_t s, int64_t *words, unsigned *done,
                                                  In *out) {
    if (g.chunks == 1) {
        exact_write<In, kOp>(sum, taken, nan_initial, out);
        return;
    }
    sum.normalize();
    int64_t *seg = words + s * ExactSegmentWords<T>::kCount;
    if (exact_add_chunk(sum, taken, seg, done + s, g.chunks))
        exact_write<In, kOp>(sum, exact_read_segment(sum, seg), nan_initial, out);
}

// A thread's elements k0, k0 + step, ... (below k1) of one segment into its window, several loads in flight;
// the mask's zero bytes left out.  `taken` counts what the mean divides by (nanmean: not its NaNs).
template <class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_read_run(const In *p, const unsigned char *m, int64_t ir, int64_t mr,
                                               int64_t k0, int64_t k1, int64_t step, ExactWindow<T> &window,
                                               ExactColumn<T> &column, uint64_t &taken) {
    constexpr int kInFlight = 8;
    constexpr int64_t kBatchesBetweenSpills = (ExactWindow<T>::kSpillEvery - 2) / kInFlight;
    int64_t batches = 0;
    for (int64_t k = k0; k < k1; k += kInFlight * step) {
        T x[kInFlight];
        bool take[kInFlight];
#pragma unroll
        for (int j = 0; j < kInFlight; j++) {
            const int64_t kj = k + j * step;
            take[j] = kj < k1 && (!m || m[kj * mr]);
            x[j] = take[j] ? exact_widen(p[kj * ir]) : T(0);
        }
#pragma unroll
        for (int j = 0; j < kInFlight; j++) {
            if (!take[j]) continue;  // (a zero would take the window's slow path)
            taken += kOp != GR_OP_NANMEAN || x[j] == x[j];
            window.add(x[j], column);
        }
        if (++batches == kBatchesBetweenSpills) {
            window.spill_window(column);
            batches = 0;
        }
    }
}

// kOp of each segment, a warp per unit (a segment, or a chunk of one where ExactSegments::chunks > 1), rounded
// once into out.  `initial` (of In, where has_initial) is added to each segment once.  `words` and `done`: the
// chunks' workspace (ExactSegmentWords per segment, a counter per segment), zero on entry; unread when
// chunks == 1.
template <class In, gr_op kOp, class T = typename ExactInput<In>::Acc>
__global__ void __launch_bounds__(ExactLaunch<T>::kBlock)
    exact_rows_kernel(const In *in, const unsigned char *mask, In *out, ExactSegments g, In initial, int has_initial,
                      int64_t *words, unsigned *done) {
    using F = ExactFormat<T>;
    constexpr int kBlock = ExactLaunch<T>::kBlock, kWarps = kBlock / 32;
    __shared__ int64_t columns[ExactColumn<T>::kWords];
    __shared__ ExactDigits<T> warp_sum[kWarps];
    const int t = threadIdx.x, lane = t % 32, w = t / 32;
    ExactDigits<T> &sum = warp_sum[w];
    for (int d = 0; d < F::kDigits; d++) columns[d * kBlock + t] = 0;
    for (int d = lane; d < F::kDigits; d += 32) sum.digit[d] = 0;
    __syncwarp();
    ExactColumn<T> column{columns + t};
    const T start = exact_widen(initial);
    const bool nan_initial = has_initial && start != start;
    const int64_t units = g.c0 * g.c1 * g.chunks;
    for (int64_t u = int64_t(blockIdx.x) * kWarps + w; u < units; u += int64_t(gridDim.x) * kWarps) {
        const int64_t chunk = u % g.chunks, s = u / g.chunks, i0 = s / g.c1, i1 = s % g.c1;
        const int64_t k0 = chunk * g.chunk, k1 = k0 + g.chunk < g.R ? k0 + g.chunk : g.R;
        ExactWindow<T> window;
        uint64_t taken = 0;
        exact_read_run<In, kOp>(in + i0 * g.is0 + i1 * g.is1, mask ? mask + i0 * g.ms0 + i1 * g.ms1 : nullptr,
                                g.ir, g.mr, k0 + lane, k1, 32, window, column, taken);
        if (has_initial && chunk == 0 && lane == 0) window.add(start, column);  // not counted: sums only
        // the warp's windows into its columns, then the columns that hold anything into the warp's digits
        exact_finish_warp(window, column);
        unsigned flags = window.flags;
        for (int offset = 16; offset > 0; offset /= 2) {
            flags |= __shfl_xor_sync(0xffffffffu, flags, offset);
            taken += __shfl_xor_sync(0xffffffffu, taken, offset);
        }
        const unsigned holding = __ballot_sync(0xffffffffu, column.touched);
        if (column.touched && column.adds >= 16) column.normalize();  // 32 columns' words then add below 2^63
        __syncwarp();
        for (int d = lane; d < F::kDigits; d += 32) {
            int64_t v = 0;
            for (unsigned h = holding; h; h &= h - 1) v += columns[d * kBlock + w * 32 + __ffs(h) - 1];
            sum.digit[d] = v;
        }
        __syncwarp();
        if (column.touched) {
            for (int d = 0; d < F::kDigits; d++) column.digit(d) = 0;
            column.touched = false;
            column.adds = 0;
        }
        if (lane == 0) {
            sum.flags = flags;
            exact_finish_unit<In, kOp>(sum, taken, nan_initial, g, s, words, done, out + i0 * g.os0 + i1 * g.os1);
        }
        __syncwarp();
    }
}

// kOp of each segment, a thread per unit, adjacent threads adjacent i1 (blocks of kBlock i1 of one i0 and one
// chunk), as exact_rows_kernel's.
template <class In, gr_op kOp, class T = typename ExactInput<In>::Acc>
__global__ void __launch_bounds__(ExactLaunch<T>::kBlock)
    exact_columns_kernel(const In *in, const unsigned char *mask, In *out, ExactSegments g, In initial,
                         int has_initial, int64_t *words, unsigned *done) {
    using F = ExactFormat<T>;
    constexpr int kBlock = ExactLaunch<T>::kBlock;
    __shared__ int64_t columns[ExactColumn<T>::kWords];
    const int t = threadIdx.x;
    for (int d = 0; d < F::kDigits; d++) columns[d * kBlock + t] = 0;
    ExactColumn<T> column{columns + t};
    const T start = exact_widen(initial);
    const bool nan_initial = has_initial && start != start;
    const int64_t column_blocks = (g.c1 + kBlock - 1) / kBlock, blocks = g.c0 * column_blocks * g.chunks;
    for (int64_t b = blockIdx.x; b < blocks; b += gridDim.x) {
        const int64_t chunk = b % g.chunks, i1 = (b / g.chunks) % column_blocks * kBlock + t,
                      i0 = b / g.chunks / column_blocks;
        if (i1 >= g.c1) continue;
        const int64_t k0 = chunk * g.chunk, k1 = k0 + g.chunk < g.R ? k0 + g.chunk : g.R;
        ExactWindow<T> window;
        uint64_t taken = 0;
        exact_read_run<In, kOp>(in + i0 * g.is0 + i1 * g.is1, mask ? mask + i0 * g.ms0 + i1 * g.ms1 : nullptr,
                                g.ir, g.mr, k0, k1, 1, window, column, taken);
        if (has_initial && chunk == 0) window.add(start, column);
        window.finish(column);
        ExactDigits<T> sum;  // the thread's column, contiguous for the rounding
        if (column.touched) {
            for (int d = 0; d < F::kDigits; d++) {
                sum.digit[d] = column.digit(d);
                column.digit(d) = 0;
            }
        } else {
            for (int d = 0; d < F::kDigits; d++) sum.digit[d] = 0;
        }
        sum.flags = column.flags;
        column.touched = false;
        column.adds = 0;
        column.flags = 0;
        exact_finish_unit<In, kOp>(sum, taken, nan_initial, g, i0 * g.c1 + i1, words, done,
                                   out + i0 * g.os0 + i1 * g.os1);
    }
}

}  // namespace gr
