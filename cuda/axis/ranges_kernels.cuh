// ranges_kernels.cuh -- segmented reductions (issue 40): ranges of the reduced dimension, each reduced alone.
//
// Over the layout of the axis reductions (SegProblem: kept dimensions (i0, i1), reduced r), K ranges of r: range k
// is [r0, r1) (RangeSet::bounds, NumPy's rules), and its value goes to out[i0 * os0 + i1 * os1 + k * ok].  Work
// items are (i0, k, i1), i1 the fastest (a column layout: neighbouring lanes read neighbouring elements), then k
// (a row layout: neighbouring ranges lie side by side).  The algorithms of cuda/abi/ranges.def run two kernels:
//   ranges_lanes_kernel  G = 1..32 lanes per work item: a thread per range (tiny ranges, and every column
//                        layout), a group of lanes or a warp per range (medium ones); under "auto" it leaves the
//                        ranges far longer than the mean to ranges_long_kernel, a warp or a block each
//                        (power-law lengths).
//   ranges_block_kernel  a block per (work item, part): long ranges, each cut into `parts` equal parts when the
//                        ranges alone cannot fill the GPU; the parts' values go to the workspace and
//                        ranges_parts_kernel folds each item's parts in order.
// Positions (argmin, argmax) count from the range's start, as CUB's DeviceSegmentedReduce and Awkward do.
// Deterministic: the association order depends on a range's length and on G or `parts`, never on timing.
//
// The device half only, so that NVRTC compiles it (abi/jit.h: GR_JIT_REDUCE_RANGES); the plan and the launches
// are axis/ranges.cuh.
#pragma once
#include "axis/segments_kernels.cuh"

namespace gr {

struct RangeSet {
    const int64_t *starts, *stops;  // K each; reduceat: the indices in starts
    int64_t K;
    int64_t ok;  // the output stride of k
    int form;  // gr_range_form (abi/gpureduce.h): NumPy's segmented_reduce's slices, or reduceat's indices
    // [r0, r1) of range k within [0, R).  The caller checked reduceat's indices (0 <= index < R); the clips here
    // keep every read in bounds whatever the offsets hold.
    __host__ __device__ __forceinline__ void bounds(int64_t k, int64_t R, int64_t &r0, int64_t &r1) const {
        int64_t a = starts[k], b;
        if (form == GR_RANGES_REDUCEAT) {
            b = k + 1 < K ? starts[k + 1] : R;
            a = a < 0 ? 0 : a > R ? R : a;
            if (b <= a) b = a + 1;
            if (b > R) b = R;
        } else {
            b = stops[k];
            if (a < 0) a += R;
            if (b < 0) b += R;
            a = a < 0 ? 0 : a > R ? R : a;
            b = b < 0 ? 0 : b > R ? R : b;
            if (b < a) b = a;
        }
        r0 = a;
        r1 = b;
    }
};

// (i0, k, i1) of work item `item`, i1 the fastest; no 64-bit division in the one-kept-dimension cases.  P is the
// reductions' SegProblem or the scans' ScanProblem (its c0 and c1).
template <class P>
__device__ __forceinline__ void range_item(const P &p, const RangeSet &g, int64_t item, int64_t &i0, int64_t &k,
                                           int64_t &i1) {
    if (p.c1 == 1) {
        i1 = 0;
        if (p.c0 == 1) { i0 = 0; k = item; }
        else { i0 = item / g.K; k = item - i0 * g.K; }
        return;
    }
    const int64_t t = item / p.c1;
    i1 = item - t * p.c1;
    if (p.c0 == 1) { i0 = 0; k = t; }
    else { i0 = t / g.K; k = t - i0 * g.K; }
}

template <class Red>
__device__ __forceinline__ void range_store(const SegProblem &p, const RangeSet &g, int64_t i0, int64_t k, int64_t i1,
                                            const typename Red::V &v, const typename Red::V &init) {
    static_cast<typename Red::Result *>(p.out)[i0 * p.os0 + i1 * p.os1 + k * g.ok] =
        finish_of<Red>(Red::combine(v, init), p.param);
}

// Folds positions [a, b) of the range at input offset `base` (its position 0) with `lanes` threads, this one
// `lane`: 16-byte vectors along a unit-stride row read from `in` alone, else kUnroll strided loads in flight.
template <class Red, class In, int kLanes>
__device__ __forceinline__ typename Red::V fold_range(const SegProblem &p, int64_t base, int64_t a, int64_t b,
                                                      int lane, int lanes, typename Red::V v) {
    if constexpr (kVectorizable<In>) {
        if (lanes == kLanes && reads_vectors<In>(p) && b - a >= 8 * kLanes)
            return fold_contiguous<Red, In, 4, kLanes>(static_cast<const In *>(p.in) + base, a, b, lane, p.param, v);
    }
    return fold_strided<Red, In, 4>(p, base, 0, a + lane, b, lanes, v);
}

// Where the lanes kernel leaves the ranges too long for its lanes (auto's plan, axis/ranges.cuh): from `from`
// elements on a range's work item is appended to the warps' list, from `block_from` on to the blocks' (the order
// of the appends varies, each range's fold does not: ranges_long_kernel folds each with one warp or one block, by
// its length).  from == 0: none.  The lists share `items`, the warps' from the front, the blocks' from the back.
struct LongRanges {
    int64_t from, block_from;
    unsigned long long *count;  // [warps' count, blocks' count] in the workspace's zeroed bytes, zeroed again
    int64_t *items;
    int64_t capacity;           // work items: every range may be long
    __device__ __forceinline__ bool take(int64_t item, int64_t len, int sub) const {
        if (from == 0 || len < from) return false;
        if (sub == 0) {
            if (len < block_from) items[atomicAdd(&count[0], 1ull)] = item;
            else items[capacity - 1 - int64_t(atomicAdd(&count[1], 1ull))] = item;
        }
        return true;
    }
};

// Short ranges (G <= 16 lanes each): kItems work items per step, every item's bounds, then every item's first
// elements in flight together, as rows_kernel does for short rows.
template <class Red, class In>
__device__ __forceinline__ void ranges_short(const SegProblem &p, const RangeSet &g, const LaneGroups &lg, int group,
                                             const LongRanges &long_ranges, const typename Red::V &init) {
    using V = typename Red::V;
    constexpr int kItems = 4;
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t item0 = lg.first; item0 - lg.group_in_warp < items; item0 += kItems * lg.per_grid) {
        int64_t base[kItems], len[kItems], i0[kItems], k[kItems], i1[kItems];
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const int64_t item = item0 + u * lg.per_grid;
            len[u] = -1;  // no such item
            base[u] = i0[u] = k[u] = i1[u] = 0;
            if (item < items) {
                int64_t r0, r1;
                range_item(p, g, item, i0[u], k[u], i1[u]);
                g.bounds(k[u], p.R, r0, r1);
                base[u] = i0[u] * p.is0 + i1[u] * p.is1 + r0 * p.ir;
                len[u] = r1 - r0;
                if (long_ranges.take(item, len[u], lg.sub)) len[u] = -1;
            }
        }
        V v[kItems];
#pragma unroll
        for (int u = 0; u < kItems; u++)
            v[u] = lg.sub < len[u] ? seg_load<Red, In>(p, base[u], 0, lg.sub) : Red::identity();
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            for (int64_t r = lg.sub + group; r < len[u]; r += group) v[u] = Red::combine(v[u], seg_load<Red, In>(p, base[u], 0, r));
            fold_lanes<Red>(v[u], group);
            if (len[u] >= 0 && lg.sub == 0) range_store<Red>(p, g, i0[u], k[u], i1[u], v[u], init);
        }
    }
}

// G = `group` lanes (a power of two up to the warp) per work item.
template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock) ranges_lanes_kernel(SegProblem p, RangeSet g, int group,
                                                                 LongRanges long_ranges, typename Red::V init) {
    using V = typename Red::V;
    const LaneGroups lg(group);
    if (group <= 16) {
        ranges_short<Red, In>(p, g, lg, group, long_ranges, init);
        return;
    }
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t item = lg.first; item - lg.group_in_warp < items; item += lg.per_grid) {
        // every lane of the warp stays in the loop until the whole warp is done, for the shuffles
        bool live = item < items;
        V v = Red::identity();
        int64_t i0 = 0, k = 0, i1 = 0;
        if (live) {
            range_item(p, g, item, i0, k, i1);
            int64_t r0, r1;
            g.bounds(k, p.R, r0, r1);
            if (long_ranges.take(item, r1 - r0, lg.sub)) live = false;
            else v = fold_range<Red, In, kWarp>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, 0, r1 - r0, lg.sub, group, v);
        }
        fold_lanes<Red>(v, group);
        if (live && lg.sub == 0) range_store<Red>(p, g, i0, k, i1, v, init);
    }
}

constexpr int kRangeBlock = 256;

// A block per (work item, part): part j of `parts` covers positions [len * j / parts, len * (j + 1) / parts) of
// its range.  One part: the value goes to out; more: to partials[item * parts + j].
template <class Red, class In>
__global__ void __launch_bounds__(kRangeBlock) ranges_block_kernel(SegProblem p, RangeSet g, int64_t parts,
                                                                   typename Red::V *partials, typename Red::V init) {
    using V = typename Red::V;
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t w = blockIdx.x; w < items * parts; w += gridDim.x) {
        const int64_t item = parts == 1 ? w : w / parts, part = w - item * parts;
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        const int64_t len = r1 - r0;
        V v = fold_range<Red, In, kRangeBlock>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, len * part / parts,
                                               len * (part + 1) / parts, threadIdx.x, kRangeBlock, Red::identity());
        v = block_fold_warps<Red, kRangeBlock>(v);
        if (threadIdx.x == 0) {
            if (parts == 1) range_store<Red>(p, g, i0, k, i1, v, init);
            else partials[w] = v;
        }
        __syncthreads();  // block_fold_warps' shared memory is reused by the next item
    }
}

// The long ranges the lanes kernel left (LongRanges): a warp each for the warps' list, a block each, whole, for
// the blocks'.  The last block to finish zeroes the counts and its own ticket, so the workspace's zeroed bytes are
// zero again after the call.
template <class Red, class In>
__global__ void __launch_bounds__(kRangeBlock) ranges_long_kernel(SegProblem p, RangeSet g, LongRanges long_ranges,
                                                                  unsigned *ticket, typename Red::V init) {
    using V = typename Red::V;
    const int64_t warp_count = int64_t(long_ranges.count[0]), count = int64_t(long_ranges.count[1]);
    const int lane = threadIdx.x % kWarp;
    const int64_t warps = int64_t(gridDim.x) * (kRangeBlock / kWarp);
    for (int64_t e = int64_t(blockIdx.x) * (kRangeBlock / kWarp) + threadIdx.x / kWarp; e < warp_count; e += warps) {
        const int64_t item = long_ranges.items[e];  // the whole warp takes the same entry: no divergence around shuffles
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        V v = fold_range<Red, In, kWarp>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, 0, r1 - r0, lane, kWarp,
                                         Red::identity());
        fold_lanes<Red>(v, kWarp);
        if (lane == 0) range_store<Red>(p, g, i0, k, i1, v, init);
    }
    for (int64_t e = blockIdx.x; e < count; e += gridDim.x) {
        const int64_t item = long_ranges.items[long_ranges.capacity - 1 - e];
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        V v = fold_range<Red, In, kRangeBlock>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, 0, r1 - r0, threadIdx.x,
                                               kRangeBlock, Red::identity());
        v = block_fold_warps<Red, kRangeBlock>(v);
        if (threadIdx.x == 0) range_store<Red>(p, g, i0, k, i1, v, init);
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(ticket, 1u) == gridDim.x - 1) {  // every block has read the count
            long_ranges.count[0] = long_ranges.count[1] = 0;
            *ticket = 0;
        }
    }
}

// A thread per work item folds its parts, in order, into out (Red is the input's Reducer: its Partials combine).
template <class Red>
__global__ void __launch_bounds__(kSegBlock) ranges_parts_kernel(SegProblem p, RangeSet g, int64_t parts,
                                                                 const typename Red::V *partials,
                                                                 typename Red::V init) {
    using V = typename Red::V;
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t item = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; item < items;
         item += int64_t(gridDim.x) * blockDim.x) {
        V v = Red::identity();
        for (int64_t j = 0; j < parts; j++) v = Red::combine(v, partials[item * parts + j]);
        int64_t i0, k, i1;
        range_item(p, g, item, i0, k, i1);
        range_store<Red>(p, g, i0, k, i1, v, init);
    }
}

}  // namespace gr
