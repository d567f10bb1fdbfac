// scan_segments_kernels.cuh -- scans along an axis: many independent scans ("segments") in one launch
// (gpureduce.h, gr_segments; the axes were merged by gpureduce/_planning/layout.py).
//
// Layout decides the kernel, as for the axis reductions (segments.cuh):
//   * rows     r is the fastest dimension: a warp per (segment, chunk), 32 elements per step, a shuffle scan
//              of the step plus the carry from the steps before.
//   * columns  i1 is the fastest: a thread per (segment, chunk), neighbouring threads on neighbouring i1, so
//              every step's loads and stores are coalesced; each thread walks its chunk serially.
//   * packed   rows of up to 1024 elements that lie back to back (a dense C-ordered block, input and output):
//              a warp walks a run of whole rows as one flat array, 32 consecutive elements per step, with a
//              segmented shuffle scan (an element adds only what lies before it in its own row).  A warp per
//              row left 31 of 32 lanes idle on rows of 2 and paid the row's index arithmetic per 32 elements.
// When the segments alone cannot fill the GPU, r is cut into chunks and the scan runs in three launches
// (reduce-then-scan): fold every chunk, scan the chunk totals of each segment (a warp per segment), rescan
// every chunk seeded with its prefix.  Deterministic: the order of operations depends only on the shape.
//
// The device half: kernels only, no host code, so that NVRTC compiles it too (abi/jit.h: GR_JIT_SCAN_SEGMENTS).
// The launch plan and the launches are the host half, axis/scan_segments.cuh.
#pragma once
#include <cstdint>
#include <cstring>
#include "primitives/scan_block.cuh"
#include "axis/segments_kernels.cuh"

namespace gr {

struct ScanProblem {
    int64_t c0, c1;
    int64_t is0, is1, ir;
    int64_t os0, os1, orr;
    int64_t R;
    const void *in;
    void *out;
};

template <class V>
__device__ __forceinline__ V shfl_up_any(const V &v, int delta) {
    return shfl_words(v, [=](int w) { return __shfl_up_sync(kFullMask, w, delta); });
}

template <class V>
__device__ __forceinline__ V shfl_idx_any(const V &v, int src) {
    return shfl_words(v, [=](int w) { return __shfl_sync(kFullMask, w, src); });
}

// Loads per lane issued before any of them is scanned: a warp then has kScanBatch loads in flight instead of one
// (one load per lane per step left too few bytes in flight to reach the memory bandwidth).
constexpr int kScanBatch = 4;

// Positions first .. first + kScanBatch - 1 of one thread's sequence (times `stride` in memory) as a scan reads
// them, the neutral element from `end` on.  A whole batch is loaded before any element is converted, so its
// kScanBatch loads are in flight together: loads guarded one by one were issued one or two at a time, each
// waited on before the next (nancumsum's column totals pass 1,000 us where cumsum's took 550, (2^14, 2^14) float32
// on an H200).  load_batch below (a warp's lanes side by side) keeps its guarded form: nvcc already issues those
// loads together (16 in flight in the interleaved totals pass), and this whole-batch test, a branch per lane
// there, cut them to four (SASS, sm_90).
template <class Op, class Acc, class In>
__device__ __forceinline__ void load_run(Acc (&xs)[kScanBatch], const In *in, int64_t first, int64_t end,
                                         int64_t stride) {
    if (first + kScanBatch <= end) {
        In raw[kScanBatch];
#pragma unroll
        for (int b = 0; b < kScanBatch; b++) raw[b] = in[(first + b) * stride];
#pragma unroll
        for (int b = 0; b < kScanBatch; b++) xs[b] = scan_element<Op, Acc>(raw[b]);
        return;
    }
#pragma unroll
    for (int b = 0; b < kScanBatch; b++)
        xs[b] = first + b < end ? scan_element<Op, Acc>(in[(first + b) * stride]) : scan_neutral<Op, Acc>();
}

// Inclusive scan of the `stride` interleaved sequences of a warp's 32 values (lane l belongs to sequence
// l % stride, 32 a multiple of stride): each lane adds what the lane `offset` below holds, offset = stride,
// 2 stride, ... < 32.  stride 1 is the plain Kogge-Stone scan; earlier operand on the left.
template <class Op, class Acc>
__device__ __forceinline__ Acc warp_scan_interleaved(Acc x, int lane, int stride) {
    for (int offset = stride; offset < kWarp; offset <<= 1) {
        const Acc below = shfl_up_any(x, offset);
        if (lane >= offset) x = Op()(below, x);
    }
    return x;
}

// Element i of a lane's batch is position first + i * 32 + lane (times `stride` in memory); the neutral element
// past `end`.
template <class Op, class Acc, class In>
__device__ __forceinline__ void load_batch(Acc (&xs)[kScanBatch], const In *in, int64_t first, int64_t end,
                                           int64_t stride, int lane) {
#pragma unroll
    for (int b = 0; b < kScanBatch; b++) {
        const int64_t e = first + b * kWarp + lane;
        xs[b] = e < end ? scan_element<Op, Acc>(in[e * stride]) : scan_neutral<Op, Acc>();
    }
}

// The total of positions [first, end) (times `stride` in memory) of each of the `C` interleaved sequences of a
// warp's lanes (C = 1: one sequence), in lanes 32 - C .. 31 (lane 32 - C + c has sequence c's): each lane folds
// its own elements, then the lanes of a sequence are folded together.  The order differs from the scan's, which
// every scan operator allows (commutative: sums, products, extremes, logaddexp); it depends only on the shape.
// No shuffle per step, so the chunk-total pass runs at the memory's pace.
template <class Op, class Acc, class In>
__device__ __forceinline__ Acc fold_chunk(const In *in, int64_t first, int64_t end, int64_t stride, int lane, int C) {
    Acc run = scan_neutral<Op, Acc>();
    for (int64_t batch = first; batch < end; batch += kWarp * kScanBatch) {
        Acc xs[kScanBatch];
        load_batch<Op>(xs, in, batch, end, stride, lane);
#pragma unroll
        for (int b = 0; b < kScanBatch; b++) run = Op()(run, xs[b]);
    }
    run = warp_scan_interleaved<Op>(run, lane, C);
    return shfl_idx_any(run, kWarp - C + lane % C);
}

// Unit-stride rows: lane l takes elements kLaneItems*l .. kLaneItems*l + kLaneItems-1 of each group of
// 32*kLaneItems, scans them in registers, and one warp scan of the 32 lane totals places them: a shuffle scan per
// 128 elements instead of per 32 (for logcumsumexp, about a third of the logaddexps).  kGroups groups are loaded
// before any is scanned.  Positions [r0, r1) of the row, starting from `carry`; an exclusive scan writes the
// identity at position `first` (0, or a segmented scan's range start).
constexpr int kLaneItems = 4;
template <class Op, class In, class Out>
__device__ __forceinline__ void scan_consecutive(const In *in, Out *out, int64_t r0, int64_t r1,
                                                 typename accumulator<Out>::type carry, bool exclusive, int lane,
                                                 int64_t first) {
    using Acc = typename accumulator<Out>::type;
    constexpr int kGroup = kWarp * kLaneItems, kGroups = 2;
    for (int64_t batch = r0; batch < r1; batch += kGroup * kGroups) {
        Acc x[kGroups][kLaneItems];
#pragma unroll
        for (int g = 0; g < kGroups; g++) {
#pragma unroll
            for (int k = 0; k < kLaneItems; k++) {
                const int64_t r = batch + g * kGroup + lane * kLaneItems + k;
                x[g][k] = r < r1 ? scan_element<Op, Acc>(in[r]) : scan_neutral<Op, Acc>();
            }
        }
#pragma unroll
        for (int g = 0; g < kGroups; g++) {
#pragma unroll
            for (int k = 1; k < kLaneItems; k++) x[g][k] = Op()(x[g][k - 1], x[g][k]);
            const Acc lanes = warp_scan_interleaved<Op>(x[g][kLaneItems - 1], lane, 1);
            const Acc lanes_before = shfl_up_any(lanes, 1);  // every lane shuffles
            const Acc prefix = lane == 0 ? carry : Op()(carry, lanes_before);
#pragma unroll
            for (int k = 0; k < kLaneItems; k++) {
                const int64_t r = batch + g * kGroup + lane * kLaneItems + k;
                if (r < r1) {
                    const Acc before = k == 0 ? prefix : Op()(prefix, x[g][k > 0 ? k - 1 : 0]);
                    out[r] = convert<Out>(exclusive ? (r == first ? Op::template identity<Acc>() : before)
                                                    : Op()(prefix, x[g][k]));
                }
            }
            carry = Op()(carry, shfl_idx_any(lanes, kWarp - 1));
        }
    }
}

// A warp scans positions [a, b) of a row (`in` and `out` at its start) from `carry`: 128 consecutive elements per
// step along unit-stride rows, else 32 strided ones; an exclusive scan writes the identity at position `first`
// (0, or a segmented scan's range start).  The rows kernel's write pass and the segmented scans' warps.
template <class Op, class In, class Out>
__device__ __forceinline__ void scan_part(const ScanProblem &p, const In *in, Out *out, int64_t first, int64_t a,
                                          int64_t b, typename accumulator<Out>::type carry, bool exclusive, int lane) {
    using Acc = typename accumulator<Out>::type;
    if (p.ir == 1 && p.orr == 1) {
        scan_consecutive<Op, In, Out>(in, out, a, b, carry, exclusive, lane, first);
        return;
    }
    for (int64_t batch = a; batch < b; batch += kWarp * kScanBatch) {
        Acc xs[kScanBatch];
        load_batch<Op>(xs, in, batch, b, p.ir, lane);
#pragma unroll
        for (int s = 0; s < kScanBatch; s++) {
            const int64_t r = batch + s * kWarp + lane;
            const Acc x = warp_scan_interleaved<Op>(xs[s], lane, 1);
            const Acc up = shfl_up_any(x, 1);  // every lane shuffles, then only the live ones store
            if (r < b) {
                const Acc before = lane == 0 ? carry : Op()(carry, up);
                out[r * p.orr] =
                    convert<Out>(exclusive ? (r == first ? Op::template identity<Acc>() : before) : Op()(carry, x));
            }
            carry = Op()(carry, shfl_idx_any(x, kWarp - 1));
        }
    }
}

// kWrite = false: fold each chunk into totals[item]; true: scan each chunk starting from carries[item]
// (nullptr: from the neutral element) and write the outputs.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_rows_kernel(ScanProblem p, int64_t chunks, int64_t L, bool exclusive,
                                                        typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t items = p.c0 * p.c1 * chunks, warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; item < items; item += warps) {
        const int64_t s = item / chunks, chunk = item - s * chunks;
        const int64_t i0 = s / p.c1, i1 = s - i0 * p.c1;
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
        if constexpr (!kWrite) {
            const Acc total = fold_chunk<Op, Acc>(in, r0, r1, p.ir, lane, 1);
            if (lane == 0) totals[item] = total;
            continue;
        }
        scan_part<Op, In, Out>(p, in, out, 0, r0, r1, (totals && chunks > 1) ? totals[item] : scan_neutral<Op, Acc>(),
                               exclusive, lane);
    }
}

// One thread per (segment, chunk), i1 fastest across threads.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_columns_kernel(ScanProblem p, int64_t chunks, int64_t L, bool exclusive,
                                                           typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int64_t items = p.c0 * p.c1 * chunks;
    for (int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; t < items; t += int64_t(gridDim.x) * blockDim.x) {
        // t = (chunk * c0 + i0) * c1 + i1
        const int64_t i1 = t % p.c1, rest = t / p.c1, i0 = rest % p.c0, chunk = rest / p.c0;
        const int64_t item = (i0 * p.c1 + i1) * chunks + chunk;  // the totals are laid out [segment][chunk]
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        const int64_t r0 = chunk * L, r1 = r0 + L < p.R ? r0 + L : p.R;
        Acc acc = (kWrite && totals && chunks > 1) ? totals[item] : scan_neutral<Op, Acc>();
        for (int64_t batch = r0; batch < r1; batch += kScanBatch) {
            Acc xs[kScanBatch];
            load_run<Op>(xs, in, batch, r1, p.ir);
#pragma unroll
            for (int b = 0; b < kScanBatch; b++) {
                const int64_t r = batch + b;
                if constexpr (kWrite) {
                    if (r < r1 && exclusive) out[r * p.orr] = convert<Out>(r == 0 ? Op::template identity<Acc>() : acc);
                    acc = Op()(acc, xs[b]);
                    if (r < r1 && !exclusive) out[r * p.orr] = convert<Out>(acc);
                } else {
                    acc = Op()(acc, xs[b]);
                }
            }
        }
        if constexpr (!kWrite) totals[item] = acc;
    }
}

// Columns whose rows lie back to back: i1 is the fastest dimension (is1 = os1 = 1) and c1 divides 32, so row r of
// block i0 is elements [r*c1, (r+1)*c1) of that block and a warp's 32 consecutive elements hold 32/c1 rows of
// every column.  A warp per (block, chunk of L rows) reads them as one flat run, 32 elements per step, and scans
// the c1 interleaved columns together (warp_scan_interleaved); lane l carries column l % c1 from the last c1
// lanes of the step before.  The thread-per-column kernel gave a warp 32/c1 scattered rows per load: 7.7x
// slower than CuPy on two columns of 2^20 rows.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_interleaved_kernel(ScanProblem p, int64_t chunks, int64_t L, bool exclusive,
                                                               typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp, C = int(p.c1), column = lane % C;
    const int64_t items = p.c0 * chunks, warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t item = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; item < items; item += warps) {
        const int64_t i0 = item / chunks, chunk = item - i0 * chunks;
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0;
        const int64_t e0 = chunk * L * C, e1 = (chunk * L + L < p.R ? chunk * L + L : p.R) * C;
        const int64_t total = (i0 * C + column) * chunks + chunk;  // [segment][chunk], segment = i0 * c1 + i1
        if constexpr (!kWrite) {
            const Acc column_total = fold_chunk<Op, Acc>(in, e0, e1, 1, lane, C);
            if (lane < C) totals[total] = column_total;
            continue;
        }
        Acc carry = (totals && chunks > 1) ? totals[total] : scan_neutral<Op, Acc>();
        for (int64_t batch = e0; batch < e1; batch += kWarp * kScanBatch) {
            Acc xs[kScanBatch];
            load_batch<Op>(xs, in, batch, e1, 1, lane);
#pragma unroll
            for (int b = 0; b < kScanBatch; b++) {
                const int64_t e = batch + b * kWarp + lane;
                const Acc x = Op()(carry, warp_scan_interleaved<Op>(xs[b], lane, C));
                const Acc up = shfl_up_any(x, C);  // every lane shuffles, then only the live ones store
                if (e < e1) {
                    const Acc before = lane < C ? carry : up;
                    out[e] = convert<Out>(exclusive ? (e < C ? Op::template identity<Acc>() : before) : x);
                }
                carry = shfl_idx_any(x, kWarp - C + column);
            }
        }
    }
}

// Chunk totals [segment][chunk] -> the exclusive prefix of each chunk within its segment, in place.  kThreads
// threads per segment (a warp, or a block when the segments are few and long): thread t folds chunks
// [t*per, (t+1)*per), a scan of the thread totals, then each thread rewrites its run.  (A thread per segment
// walking every chunk made two columns of 2^20 rows take 750 µs on the H200.)
template <class Op, class Acc, int kThreads>
__global__ void __launch_bounds__(256) scan_chunk_totals_kernel(Acc *totals, int64_t segments, int64_t chunks) {
    constexpr int kWarps = kThreads / kWarp;
    __shared__ Acc warp_total[kWarps > 1 ? kWarps : 1];
    const int t = threadIdx.x % kThreads, lane = t % kWarp, warp = t / kWarp;
    const int64_t groups = int64_t(gridDim.x) * (blockDim.x / kThreads), per = (chunks + kThreads - 1) / kThreads;
    const int64_t c0 = t * per < chunks ? t * per : chunks, c1 = c0 + per < chunks ? c0 + per : chunks;
    for (int64_t s = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kThreads; s < segments; s += groups) {
        Acc *run_of = totals + s * chunks;
        Acc run = scan_neutral<Op, Acc>();
        for (int64_t c = c0; c < c1; c++) run = Op()(run, run_of[c]);
        run = warp_scan_interleaved<Op>(run, lane, 1);
        Acc before = shfl_up_any(run, 1);
        if (lane == 0) before = scan_neutral<Op, Acc>();
        if constexpr (kWarps > 1) {  // add the totals of the warps before this one, in warp order
            if (lane == kWarp - 1) warp_total[warp] = run;
            __syncthreads();
            Acc warps_before = scan_neutral<Op, Acc>();
            for (int w = 0; w < warp; w++) warps_before = Op()(warps_before, warp_total[w]);
            before = Op()(warps_before, before);
            __syncthreads();
        }
        for (int64_t c = c0; c < c1; c++) {
            const Acc x = run_of[c];
            run_of[c] = before;
            before = Op()(before, x);
        }
    }
}

// Rows lying back to back (row i is elements [i*R, (i+1)*R) of `in` and of `out`), R <= kPackedRowsMax: warp w
// scans rows [w*rows_per_warp, ...) as one flat run, 32 elements per step.  `pos` is an element's place in its
// row: the shuffle scan adds the element `offset` lanes below only when pos >= offset (same row), and an element
// whose row began in an earlier step (pos > lane) adds the carry, the last lane's value of that step.
template <class Op, class In, class Out>
__global__ void __launch_bounds__(256)
    scan_packed_rows_kernel(const In *in, Out *out, int64_t rows, int64_t R, int64_t rows_per_warp, bool exclusive) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t groups = (rows + rows_per_warp - 1) / rows_per_warp;
    const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    const int step = kWarp % int(R);  // how far pos moves per step, modulo R
    for (int64_t g = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; g < groups; g += warps) {
        const int64_t e0 = g * rows_per_warp * R;
        const int64_t last_row = (g + 1) * rows_per_warp < rows ? (g + 1) * rows_per_warp : rows;
        const int64_t e1 = last_row * R;
        int pos = lane % int(R);
        Acc carry = scan_neutral<Op, Acc>();
        for (int64_t batch = e0; batch < e1; batch += kWarp * kScanBatch) {
            Acc xs[kScanBatch];
            load_batch<Op>(xs, in, batch, e1, 1, lane);
#pragma unroll
            for (int b = 0; b < kScanBatch; b++) {
                const int64_t e = batch + b * kWarp + lane;
                Acc x = xs[b];
#pragma unroll
                for (int offset = 1; offset < kWarp; offset <<= 1) {
                    const Acc below = shfl_up_any(x, offset);
                    if (lane >= offset && pos >= offset) x = Op()(below, x);
                }
                if (pos > lane) x = Op()(carry, x);
                const Acc up = shfl_up_any(x, 1);  // every lane shuffles, then only the live ones store
                if (e < e1) {
                    const Acc before = lane == 0 ? carry : up;
                    out[e] = convert<Out>(exclusive ? (pos == 0 ? Op::template identity<Acc>() : before) : x);
                }
                carry = shfl_idx_any(x, kWarp - 1);
                pos += step;
                if (pos >= int(R)) pos -= int(R);
            }
        }
    }
}

}  // namespace gr
