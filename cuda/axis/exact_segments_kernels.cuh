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
// whole-array kernel, variants/exact_sum_kernels.cuh); a unit-stride row is read as 16-byte vectors.  A unit
// that is a whole segment rounds its sum and writes it: by one conversion where its windows held every element at
// one anchor (exact_round_window: the usual case), else from the digits.  A chunk adds its digits to the
// segment's in the workspace (integer atomics: any order) and the last chunk of the segment to finish rounds them.
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

// One element into a thread's window; `taken` counts what a mean divides by (nanmean: not its NaNs).
template <gr_op kOp, class T>
__device__ __forceinline__ void exact_take(T x, ExactWindow<T> &window, ExactColumn<T> &column, uint64_t &taken) {
    taken += kOp != GR_OP_NANMEAN || x == x;
    window.add(x, column);
}

// A thread's `count` elements p[0], p[stride], ... into its window, eight loads in flight (kMasked: only those
// whose mask byte m[0], m[mask_stride], ... is nonzero).  The window spills before its headroom runs out.
template <bool kMasked, class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_read_strided(const In *p, const unsigned char *m, int64_t stride,
                                                   int64_t mask_stride, int64_t count, ExactWindow<T> &window,
                                                   ExactColumn<T> &column, uint64_t &taken) {
    constexpr int kInFlight = 8;
    constexpr int64_t kBatchesBetweenSpills = (ExactWindow<T>::kSpillEvery - 2) / kInFlight;
    int64_t batches = 0;
    for (; count >= kInFlight; count -= kInFlight) {
        T x[kInFlight];
        bool take[kInFlight];
#pragma unroll
        for (int j = 0; j < kInFlight; j++) {
            take[j] = !kMasked || m[j * mask_stride];
            x[j] = exact_widen(p[j * stride]);
        }
#pragma unroll
        for (int j = 0; j < kInFlight; j++)
            if (take[j]) exact_take<kOp>(x[j], window, column, taken);  // (a zero would take the slow path)
        p += kInFlight * stride;
        if (kMasked) m += kInFlight * mask_stride;
        if (++batches == kBatchesBetweenSpills) {
            window.spill_window(column);
            batches = 0;
        }
    }
    for (int64_t j = 0; j < count; j++)
        if (!kMasked || m[j * mask_stride]) exact_take<kOp>(exact_widen(p[j * stride]), window, column, taken);
}

// Elements [0, n) of unit-stride p shared by `lanes` threads (this one `lane`), read as 16-byte vectors where
// aligned (a thread's ExactLaunch::kVectorsInFlight at a time), the elements before the first vector boundary and
// after the last whole vector one by one.
template <class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_read_contiguous(const In *p, int64_t n, int lane, int lanes,
                                                      ExactWindow<T> &window, ExactColumn<T> &column,
                                                      uint64_t &taken) {
    using Vec = ExactVector<In>;
    constexpr int kInFlight = ExactLaunch<T>::kVectorsInFlight;
    constexpr int64_t kBatchesBetweenSpills = (ExactWindow<T>::kSpillEvery - 2) / (kInFlight * Vec::kLanes);
    const int64_t misalign = int64_t(reinterpret_cast<uintptr_t>(p) % 16);
    int64_t head = misalign ? (16 - misalign) / int64_t(sizeof(In)) : 0;
    head = head < n ? head : n;
    for (int64_t k = lane; k < head; k += lanes) exact_take<kOp>(exact_widen(p[k]), window, column, taken);
    const typename Vec::type *v = reinterpret_cast<const typename Vec::type *>(p + head);
    const int64_t count = (n - head) / Vec::kLanes;
    int64_t i = lane, batches = 0;
    for (; i + (kInFlight - 1) * lanes < count; i += kInFlight * lanes) {
        typename Vec::type loaded[kInFlight];
#pragma unroll
        for (int k = 0; k < kInFlight; k++) loaded[k] = __ldg(&v[i + k * lanes]);  // (the read-only path)
#pragma unroll
        for (int k = 0; k < kInFlight; k++) {
            T x[Vec::kLanes];
            Vec::each(loaded[k], x);
#pragma unroll
            for (int l = 0; l < Vec::kLanes; l++) exact_take<kOp>(x[l], window, column, taken);
        }
        if (++batches == kBatchesBetweenSpills) {
            window.spill_window(column);
            batches = 0;
        }
    }
    for (; i < count; i += lanes) {
        T x[Vec::kLanes];
        Vec::each(__ldg(&v[i]), x);
#pragma unroll
        for (int l = 0; l < Vec::kLanes; l++) exact_take<kOp>(x[l], window, column, taken);
    }
    for (int64_t k = head + count * Vec::kLanes + lane; k < n; k += lanes)
        exact_take<kOp>(exact_widen(p[k]), window, column, taken);
}

// A thread's elements k0, k0 + step, ... (below k1) of a segment whose element r is p[r * ir] (mask byte
// m[r * mr], m null: every element) into its window.  `lanes` threads share the segment with this one, `lane`
// (step = lanes: the rows kernel's warp; 1: the columns kernel's thread alone).
template <class In, gr_op kOp, class T>
__device__ __forceinline__ void exact_read_segment(const In *p, const unsigned char *m, int64_t ir, int64_t mr,
                                                   int64_t k0, int64_t k1, int lane, int lanes,
                                                   ExactWindow<T> &window, ExactColumn<T> &column, uint64_t &taken) {
    if (k0 + lane < k1) window.anchor_at(exact_widen(p[(k0 + lane) * ir]));  // (the hot path from the first)
    if (!m && ir == 1) {
        exact_read_contiguous<In, kOp>(p + k0, k1 - k0, lane, lanes, window, column, taken);
        return;
    }
    const int64_t first = k0 + lane, count = first < k1 ? (k1 - first + lanes - 1) / lanes : 0;
    if (m) exact_read_strided<true, In, kOp>(p + first * ir, m + first * mr, lanes * ir, lanes * mr, count, window,
                                             column, taken);
    else exact_read_strided<false, In, kOp>(p + first * ir, m, lanes * ir, 0, count, window, column, taken);
}

// S = w x 2^anchor (units of 2^kLsb of T, ExactWindow's) rounded to nearest-even in T in one conversion, where
// the result is in T's normal range or beyond it (an overflow is an infinity, as IEEE 754 rounds); false where
// it would be subnormal (the digits' rounding then).  +0.0 for S = 0.
template <class T>
__device__ __forceinline__ bool exact_round_window(__int128 w, int anchor, T *out) {
    using U = unsigned __int128;
    constexpr int kMantissa = ExactFormat<T>::kMantissa, kMinExponent = sizeof(T) == 8 ? -1022 : -126;
    const bool negative = w < 0;
    const U m = negative ? U(-w) : U(w);
    if (m == 0) {
        *out = T(0);
        return true;
    }
    const uint64_t hi = uint64_t(m >> 64), lo = uint64_t(m);
    const int top = hi ? 127 - __clzll(hi) : 63 - __clzll(lo);
    const int shift = top >= kMantissa ? top - (kMantissa - 1) : 0;  // bits below the kept ones
    uint64_t kept = uint64_t(m >> shift);
    if (shift > 0) {
        const U rest = m & ((U(1) << shift) - 1), half = U(1) << (shift - 1);
        kept += rest > half || (rest == half && (kept & 1u));  // (2^kMantissa at most: one binade up, exact)
    }
    const int exponent = anchor + ExactTarget<T>::kLsb + shift;  // S rounded = kept x 2^exponent
    if ((shift > 0 ? kMantissa - 1 : top) + exponent < kMinExponent) return false;
    T r;
    if constexpr (sizeof(T) == 8) r = ldexp(double(kept), exponent);
    else r = ldexpf(float(kept), exponent);
    *out = negative ? -r : r;
    return true;
}

// Whether a whole segment's sum may be rounded from its window alone (exact_round_window): a sum or nansum in the
// input's own format, no NaN or infinity it keeps, no NaN initial=.
template <class In, gr_op kOp, class T>
__device__ __forceinline__ bool exact_window_rounds(unsigned flags, bool nan_initial, const ExactSegments &g) {
    constexpr bool kNan = kOp == GR_OP_NANSUM;
    if constexpr ((kOp == GR_OP_SUM || kNan) && sizeof(In) == sizeof(T))
        return g.chunks == 1 && !nan_initial && (kNan ? flags & ~unsigned(kExactNaN) : flags) == 0;
    else
        return false;
}

// The warp's windows summed (in 128 bits: 32 of them cannot overflow it) into every lane's `total`, at their one
// `anchor`; false where the lanes that hold anything do not share one.
template <class T>
__device__ __forceinline__ bool exact_warp_window_sum(const ExactWindow<T> &window, __int128 &total, int &anchor) {
    const unsigned holding = __ballot_sync(0xffffffffu, window.w != 0);
    total = 0;
    anchor = 0;
    if (!holding) return true;
    anchor = __shfl_sync(0xffffffffu, window.anchor, __ffs(holding) - 1);
    if (!__all_sync(0xffffffffu, window.w == 0 || window.anchor == anchor)) return false;
    total = window.w;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) {
        const uint64_t lo = __shfl_xor_sync(0xffffffffu, uint64_t(total), offset);
        const uint64_t hi = __shfl_xor_sync(0xffffffffu, uint64_t((unsigned __int128)total >> 64), offset);
        total += (__int128)(((unsigned __int128)hi << 64) | lo);
    }
    return true;
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
        exact_read_segment<In, kOp>(in + i0 * g.is0 + i1 * g.is1, mask ? mask + i0 * g.ms0 + i1 * g.ms1 : nullptr,
                                    g.ir, g.mr, k0, k1, lane, 32, window, column, taken);
        if (has_initial && chunk == 0 && lane == 0) window.add(start, column);  // not counted: sums only
        unsigned flags = window.flags;
        for (int offset = 16; offset > 0; offset /= 2) {
            flags |= __shfl_xor_sync(0xffffffffu, flags, offset);
            taken += __shfl_xor_sync(0xffffffffu, taken, offset);
        }
        // the usual segment's sum: the windows at one anchor held every element, one conversion rounds it
        if (exact_window_rounds<In, kOp, T>(flags, nan_initial, g) && !__any_sync(0xffffffffu, column.touched)) {
            __int128 total;
            int anchor;
            if (exact_warp_window_sum(window, total, anchor)) {
                T r;
                bool rounded = lane == 0 && exact_round_window<T>(total, anchor, &r);
                if (rounded) out[i0 * g.os0 + i1 * g.os1] = In(r);
                if (__shfl_sync(0xffffffffu, rounded, 0)) continue;
            }
        }
        // else the warp's windows into its columns, then the columns that hold anything into the warp's digits
        exact_finish_warp(window, column);
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

// kOp of each segment, a thread per unit, adjacent threads adjacent i1 (then the next chunk, then the next i0:
// a block is never idle for want of columns), as exact_rows_kernel's.
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
    const int64_t units = g.c0 * g.c1 * g.chunks;
    for (int64_t u = int64_t(blockIdx.x) * kBlock + t; u < units; u += int64_t(gridDim.x) * kBlock) {
        const int64_t i1 = u % g.c1, chunk = u / g.c1 % g.chunks, i0 = u / g.c1 / g.chunks;
        const int64_t k0 = chunk * g.chunk, k1 = k0 + g.chunk < g.R ? k0 + g.chunk : g.R;
        ExactWindow<T> window;
        uint64_t taken = 0;
        exact_read_segment<In, kOp>(in + i0 * g.is0 + i1 * g.is1, mask ? mask + i0 * g.ms0 + i1 * g.ms1 : nullptr,
                                    g.ir, g.mr, k0, k1, 0, 1, window, column, taken);
        if (has_initial && chunk == 0) window.add(start, column);
        T r;  // the usual segment's sum: its window held every element, one conversion rounds it
        if (exact_window_rounds<In, kOp, T>(window.flags, nan_initial, g) && !column.touched &&
            exact_round_window<T>(window.w, window.anchor, &r)) {
            out[i0 * g.os0 + i1 * g.os1] = In(r);
            continue;
        }
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
