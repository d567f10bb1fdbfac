// scan_ranges_kernels.cuh -- segmented scans (issue 40): each range of the scanned dimension scanned alone, the
// scan restarting at its start, written in place of the input's positions (the result has the input's shape).
//
// Over the layout of the axis scans (ScanProblem: kept dimensions (i0, i1), scanned r), K ranges of r given as the
// segmented reductions give them (RangeSet, NumPy's slice rules), disjoint (the caller checks it: two ranges
// writing one position would race).  Work items are (i0, k, i1), i1 the fastest, as in ranges_kernels.cuh.
//   scan_ranges_fill_kernel    the identity at every position, first, where some positions lie in no range
//   scan_ranges_thread_kernel  a thread per work item: tiny ranges (a row layout: 256 ranges at a time staged
//                              through shared memory), and every column layout (neighbouring threads on
//                              neighbouring i1)
//   scan_ranges_warp_kernel    a warp per (work item, part): part j of `parts` covers positions
//                              [len * j / parts, len * (j + 1) / parts) of its range.  One part: one pass.  More
//                              (few long ranges, too few to fill the GPU): reduce-then-scan, as the axis scans
//                              cut their rows: kWrite = false folds each part into totals[item * parts + j],
//                              scan_chunk_totals_kernel turns them into each part's prefix, kWrite = true scans
//                              each part from it.
//   scan_ranges_long_*         under "auto", the ranges far longer than the mean (power-law lengths) that the
//                              thread or warp kernel left in a list (LongParts): each cut into parts of a fixed
//                              length, a warp per part, reduce-then-scan as above (fold the parts, a warp turns each
//                              range's part totals into prefixes, scan each part from its prefix).
// Deterministic: the order of operations depends on a range's length and `parts` (or the fixed part length),
// never on timing; only where a long range's parts sit in the list varies.
//
// The device half only, so that NVRTC compiles it (abi/jit.h: GR_JIT_SCAN_RANGES); the plan and the launches are
// axis/scan_ranges.cuh.
#pragma once
#include "axis/ranges_kernels.cuh"
#include "axis/scan_segments_kernels.cuh"

namespace gr {

// The ranges of `from` elements and more, left by the thread or warp kernel for the long kernels (from == 0: none):
// each range reserves ceil(len / part) consecutive slots of the list, slot s holding (work item, the range's first
// slot).  The slots taken are counted at `count` (the workspace's zeroed bytes, zeroed again by the last kernel).
struct LongParts {
    int64_t from, part;
    unsigned long long *count;
    unsigned *ticket;
    int64_t *slots;     // 2 per slot
    int64_t capacity;   // slots: disjoint ranges never take more (axis/scan_ranges.cuh: long_slots); no write past it
    __device__ __forceinline__ bool take(int64_t item, int64_t len) const {
        if (from == 0 || len < from) return false;
        const int64_t parts = (len + part - 1) / part;
        const int64_t first = int64_t(atomicAdd(count, static_cast<unsigned long long>(parts)));
        for (int64_t j = first; j < first + parts && j < capacity; j++) {
            slots[2 * j] = item;
            slots[2 * j + 1] = first;
        }
        return true;
    }
    // The slots the long kernels read: those taken, never past the list's end.
    __device__ __forceinline__ int64_t listed() const {
        const int64_t taken = int64_t(*count);
        return taken < capacity ? taken : capacity;
    }
};

template <class Op, class Out>
__global__ void __launch_bounds__(256) scan_ranges_fill_kernel(ScanProblem p) {
    using Acc = typename accumulator<Out>::type;
    const Out identity = convert<Out>(Op::template identity<Acc>());
    const int64_t total = p.c0 * p.c1 * p.R;
    for (int64_t e = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; e < total; e += int64_t(gridDim.x) * blockDim.x) {
        // e = (i0 * c1 + i1) * R + r: r the fastest, so a row layout writes consecutive elements
        const int64_t t = e / p.R, r = e - t * p.R, i0 = t / p.c1, i1 = t - i0 * p.c1;
        static_cast<Out *>(p.out)[i0 * p.os0 + i1 * p.os1 + r * p.orr] = identity;
    }
}

// A thread per work item.  `tiled` (a row layout): a block takes 256 consecutive work items at a time and, where
// their ranges hold at most kTile elements in all, stages them through shared memory: the block reads them packed
// one range after another (neighbouring threads read neighbouring elements, each finding its range by a binary
// search of the ranges' offsets in the pack), each thread scans its own range there, and the block writes them
// back the same way.  A thread walking its range alone in global memory made each load of a warp touch 32
// scattered lines (8.5-element ranges: 15 times the whole-array scan's time).  Otherwise (a column layout, whose
// threads already read neighbouring elements, or a group of ranges too long for the tile) each thread scans its
// range from global memory, kScanBatch loads in flight.
constexpr int kScanTileBytes = 32768;
template <class Op, class In, class Out>
__global__ void __launch_bounds__(256) scan_ranges_thread_kernel(ScanProblem p, RangeSet g, bool exclusive,
                                                                 LongParts long_parts, bool tiled) {
    using Acc = typename accumulator<Out>::type;
    constexpr int kThreads = 256, kTile = kScanTileBytes / int(sizeof(Acc));
    __shared__ alignas(16) unsigned char raw[kScanTileBytes];  // raw storage: Acc need not be trivially constructible
    Acc *const tile = reinterpret_cast<Acc *>(raw);
    // per range of the group: its place in the pack, where it starts in the input and in the output
    __shared__ int64_t offset[kThreads + 1], in_at[kThreads], out_at[kThreads], warp_total[kThreads / kWarp];
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t item0 = int64_t(blockIdx.x) * kThreads; item0 < items; item0 += int64_t(gridDim.x) * kThreads) {
        const int64_t item = item0 + threadIdx.x;
        int64_t i0 = 0, k = 0, i1 = 0, r0 = 0, r1 = 0;
        if (item < items) {
            range_item(p, g, item, i0, k, i1);
            g.bounds(k, p.R, r0, r1);
            if (long_parts.take(item, r1 - r0)) r1 = r0;  // the long kernels scan it
        }
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        const int64_t len = r1 - r0;
        if (tiled) {
            // each range's place in the pack: an exclusive scan of the lengths over the block
            int64_t v = len;
#pragma unroll
            for (int o = 1; o < kWarp; o <<= 1) {
                const int64_t below = __shfl_up_sync(kFullMask, v, o);
                if (lane >= o) v += below;
            }
            if (lane == kWarp - 1) warp_total[warp] = v;
            __syncthreads();
            int64_t before = 0, total = 0;
            for (int w = 0; w < kThreads / kWarp; w++) {
                if (w < warp) before += warp_total[w];
                total += warp_total[w];
            }
            const int64_t at = before + v - len;
            offset[threadIdx.x] = at;
            if (threadIdx.x == 0) offset[kThreads] = total;
            in_at[threadIdx.x] = i0 * p.is0 + i1 * p.is1 + r0 * p.ir;
            out_at[threadIdx.x] = i0 * p.os0 + i1 * p.os1 + r0 * p.orr;
            __syncthreads();
            if (total <= kTile) {
                // element j of the pack: range t (the last whose offset is <= j: a non-empty one), position j - offset[t]
                auto range_of = [&](int64_t j) {
                    int lo = 0, hi = kThreads;  // offset[lo] <= j < offset[hi]
                    while (hi - lo > 1) {
                        const int mid = (lo + hi) / 2;
                        if (offset[mid] <= j) lo = mid;
                        else hi = mid;
                    }
                    return lo;
                };
                const In *all_in = static_cast<const In *>(p.in);
                for (int64_t j = threadIdx.x; j < total; j += kThreads) {
                    const int r = range_of(j);
                    tile[j] = scan_element<Op, Acc>(all_in[in_at[r] + (j - offset[r]) * p.ir]);
                }
                __syncthreads();
                Acc acc = scan_neutral<Op, Acc>();
                for (int64_t j = at; j < at + len; j++) {
                    const Acc x = tile[j];
                    if (exclusive) tile[j] = j == at ? Op::template identity<Acc>() : acc;
                    acc = Op()(acc, x);
                    if (!exclusive) tile[j] = acc;
                }
                __syncthreads();
                Out *all_out = static_cast<Out *>(p.out);
                for (int64_t j = threadIdx.x; j < total; j += kThreads) {
                    const int r = range_of(j);
                    all_out[out_at[r] + (j - offset[r]) * p.orr] = convert<Out>(tile[j]);
                }
                __syncthreads();  // the next group rewrites the tile and the offsets
                continue;
            }
            __syncthreads();
        }
        Acc acc = scan_neutral<Op, Acc>();
        for (int64_t batch = r0; batch < r1; batch += kScanBatch) {
            Acc xs[kScanBatch];
            load_run<Op>(xs, in, batch, r1, p.ir);
#pragma unroll
            for (int b = 0; b < kScanBatch; b++) {
                const int64_t r = batch + b;
                if (r >= r1) break;
                if (exclusive) out[r * p.orr] = convert<Out>(r == r0 ? Op::template identity<Acc>() : acc);
                acc = Op()(acc, xs[b]);
                if (!exclusive) out[r * p.orr] = convert<Out>(acc);
            }
        }
    }
}

template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_ranges_warp_kernel(ScanProblem p, RangeSet g, int64_t parts,
                                                               bool exclusive, typename accumulator<Out>::type *totals,
                                                               LongParts long_parts) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t work = p.c0 * p.c1 * g.K * parts, warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t w = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; w < work; w += warps) {
        const int64_t item = parts == 1 ? w : w / parts, part = w - item * parts;
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        const int64_t len = r1 - r0, a = r0 + len * part / parts, b = r0 + len * (part + 1) / parts;
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        if constexpr (!kWrite) {
            const Acc total = fold_chunk<Op, Acc>(in, a, b, p.ir, lane, 1);
            if (lane == 0) totals[w] = total;
        } else {
            bool listed = false;  // one lane lists the range, the warp follows (no divergence around shuffles)
            if (lane == 0) listed = long_parts.take(item, len);
            if (__shfl_sync(kFullMask, listed, 0)) continue;
            scan_part<Op, In, Out>(p, in, out, r0, a, b, (totals && parts > 1) ? totals[w] : scan_neutral<Op, Acc>(),
                                   exclusive, lane);
        }
    }
}

// The listed long ranges (LongParts), a warp per slot: part j of a range is positions [r0 + j * part, ...) of
// it.  kWrite = false folds each part into totals[slot]; true scans it from its prefix, and the last block to
// finish zeroes the count and its ticket.
template <class Op, class In, class Out, bool kWrite>
__global__ void __launch_bounds__(256) scan_ranges_long_kernel(ScanProblem p, RangeSet g, bool exclusive,
                                                               LongParts long_parts,
                                                               typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t count = long_parts.listed(), warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t s = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; s < count; s += warps) {
        const int64_t item = long_parts.slots[2 * s], first = long_parts.slots[2 * s + 1];
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        const int64_t a = r0 + (s - first) * long_parts.part, b = a + long_parts.part < r1 ? a + long_parts.part : r1;
        const In *in = static_cast<const In *>(p.in) + i0 * p.is0 + i1 * p.is1;
        Out *out = static_cast<Out *>(p.out) + i0 * p.os0 + i1 * p.os1;
        if constexpr (!kWrite) {
            const Acc total = fold_chunk<Op, Acc>(in, a, b, p.ir, lane, 1);
            if (lane == 0) totals[s] = total;
        } else {
            scan_part<Op, In, Out>(p, in, out, r0, a, b, totals[s], exclusive, lane);
        }
    }
    if constexpr (kWrite) {
        __syncthreads();
        if (threadIdx.x == 0) {
            __threadfence();
            if (atomicAdd(long_parts.ticket, 1u) == gridDim.x - 1) {  // every block has read the count
                *long_parts.count = 0;
                *long_parts.ticket = 0;
            }
        }
    }
}

// The part totals of each listed long range -> each part's exclusive prefix within its range, in place: a warp
// per range (at its first slot), 32 parts per step.
template <class Op, class In, class Out>
__global__ void __launch_bounds__(256) scan_ranges_long_prefix_kernel(ScanProblem p, RangeSet g,
                                                                      LongParts long_parts,
                                                                      typename accumulator<Out>::type *totals) {
    using Acc = typename accumulator<Out>::type;
    const int lane = threadIdx.x % kWarp;
    const int64_t count = long_parts.listed(), warps = int64_t(gridDim.x) * (blockDim.x / kWarp);
    for (int64_t s = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp; s < count; s += warps) {
        if (long_parts.slots[2 * s + 1] != s) continue;  // not a range's first part (the whole warp skips)
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, long_parts.slots[2 * s], i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        const int64_t parts = (r1 - r0 + long_parts.part - 1) / long_parts.part;
        Acc carry = scan_neutral<Op, Acc>();
        for (int64_t j0 = 0; j0 < parts; j0 += kWarp) {
            const int64_t j = j0 + lane;
            const Acc x = j < parts && s + j < count ? totals[s + j] : scan_neutral<Op, Acc>();
            const Acc inclusive = warp_scan_interleaved<Op>(x, lane, 1);
            const Acc up = shfl_up_any(inclusive, 1);
            if (j < parts && s + j < count) totals[s + j] = lane == 0 ? carry : Op()(carry, up);
            carry = Op()(carry, shfl_idx_any(inclusive, kWarp - 1));
        }
    }
}

}  // namespace gr
