// ranges_kernels.cuh -- segmented reductions (issue 40): ranges of the reduced dimension, each reduced alone.
//
// Over the layout of the axis reductions (SegProblem: kept dimensions (i0, i1), reduced r), K ranges of r: range k
// is [r0, r1) (RangeSet::bounds, NumPy's rules), and its value goes to out[i0 * os0 + i1 * os1 + k * ok].  Work
// items are (i0, k, i1), i1 the fastest (a column layout: neighbouring lanes read neighbouring elements), then k
// (a row layout: neighbouring ranges lie side by side).  The algorithms of cuda/abi/ranges.def run these kernels:
//   ranges_thread_kernel a thread per work item (tiny ranges, and every column layout);
//   ranges_lanes_kernel  G = 2..16 lanes per work item, and
//   ranges_warp_kernel   a warp per work item: medium ranges.  Under "auto" these three leave the ranges far longer
//                        than the mean to ranges_long_kernel, a warp or a block each (power-law lengths), the
//                        few huge ones cut into parts that all its blocks share (ranges_huge).
//   ranges_block_kernel  a block per (work item, part): long ranges, each cut into `parts` equal parts when the
//                        ranges alone cannot fill the GPU; the parts' values go to the workspace and
//                        ranges_parts_kernel folds each item's parts in order.
// Positions (argmin, argmax) count from the range's start, as CUB's DeviceSegmentedReduce and Awkward do.
// Deterministic: the association order depends on a range's length and on G or `parts` (a huge range's parts: on
// its length, and on whether at most kHugeRanges are huge), never on timing.
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

// fold_contiguous's association, with every load of a row of up to kUnroll * kLanes vectors in flight at once:
// a lane's head and tail elements (one each at most, K <= kLanes) read before the vectors, the last group of
// vectors predicated instead of one vector a step.  A warp's range of about 1,000 float32 cost five memory round
// trips the other way (head, two groups, the rest, tail).
template <class Red, class In, int kUnroll, int kLanes>
__device__ __forceinline__ typename Red::V fold_contiguous_in_flight(const In *row, int64_t r0, int64_t r1, int lane,
                                                                     double param, typename Red::V v) {
    using Vec = Vec16<In>;
    constexpr int K = Vec::kLanes;
    static_assert(K <= kLanes, "a lane holds one head and one tail element at most");
    const int64_t n = r1 - r0;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(row + r0);
    int64_t head = int64_t((16 - addr % 16) % 16) / int64_t(sizeof(In));
    if (head > n) head = n;
    const Vec *vec = reinterpret_cast<const Vec *>(row + r0 + head);
    const int64_t nv = (n - head) / K, tail_at = head + nv * K + lane;
    bool head_left = lane < head;
    const bool has_tail = tail_at < n;
    In hx, tx;
    if (head_left) hx = row[r0 + lane];
    if (has_tail) tx = row[r0 + tail_at];
    for (int64_t j = lane; j < nv || head_left; j += kUnroll * kLanes) {
        Vec x[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; u++)
            if (j + u * kLanes < nv) x[u] = vec[j + u * kLanes];
        if (head_left) v = fold_element<Red>(v, hx, r0 + lane, param);
        head_left = false;
#pragma unroll
        for (int u = 0; u < kUnroll; u++) {
            if (j + u * kLanes >= nv) continue;
            const int64_t r = r0 + head + (j + u * kLanes) * K;
#pragma unroll
            for (int k = 0; k < K; k++) v = fold_element<Red>(v, x[u].lane[k], r + k, param);
        }
    }
    if (has_tail) v = fold_element<Red>(v, tx, r0 + tail_at, param);
    return v;
}

// Folds positions [a, b) of the range at input offset `base` (its position 0) with `lanes` threads, this one
// `lane`: 16-byte vectors along a unit-stride row read from `in` alone, else kUnroll strided loads in flight.
template <class Red, class In, int kLanes>
__device__ __forceinline__ typename Red::V fold_range(const SegProblem &p, int64_t base, int64_t a, int64_t b,
                                                      int lane, int lanes, typename Red::V v) {
    if constexpr (kVectorizable<In>) {
        if (lanes == kLanes && reads_vectors<In>(p) && b - a >= 8 * kLanes)
            return fold_contiguous_in_flight<Red, In, 4, kLanes>(static_cast<const In *>(p.in) + base, a, b, lane,
                                                                 p.param, v);
    }
    return fold_strided<Red, In, 4>(p, base, 0, a + lane, b, lanes, v);
}

// Where the lanes kernel leaves the ranges too long for its lanes (auto's plan, axis/ranges.cuh): from `from`
// elements on a range's work item is appended to the warps' list, from `block_from` on to the blocks' (the order
// of the appends varies, each range's fold does not: ranges_long_kernel folds each with one warp or one block, by
// its length).  from == 0: none.  The lists share `items`, the warps' from the front, the blocks' from the back.
// A range of `huge_from` elements or more (huge_from == 0: none) is also noted in `huge`: where at most
// kHugeRanges are (a count that does not depend on timing, so neither do the bits), every block of the LONG
// kernel takes parts of them (ranges_huge) instead of one block each: one block reads a few tens of GB/s, and a
// power-law range of 3 million float32 held a whole call up (H200: 397 of 548 us).
constexpr int kHugeRanges = 192;  // a byte-wide ticket each in the workspace's zeroed bytes
constexpr int kHugeParts = 128;   // parts of a huge range at most (a ticket byte counts them; one per block thread)
static_assert(kHugeParts < 256, "a ticket byte counts a huge range's parts");

struct LongRanges {
    int64_t from, block_from, huge_from;
    unsigned long long *count;  // [warps', blocks', -, huge] counts in the workspace's zeroed bytes, zeroed again
    int64_t *items;
    int64_t capacity;           // work items: every range may be long
    int64_t *huge;              // kHugeRanges work items
    void *huge_partials;        // kHugeParts Red::V values per huge range
    unsigned *huge_tickets;     // kHugeRanges bytes in the zeroed bytes: a huge range's parts done
    __device__ __forceinline__ bool take(int64_t item, int64_t len, int sub) const {
        if (from == 0 || len < from) return false;
        if (sub == 0) {
            if (len < block_from) items[atomicAdd(&count[0], 1ull)] = item;
            else items[capacity - 1 - int64_t(atomicAdd(&count[1], 1ull))] = item;
            if (huge_from > 0 && len >= huge_from) {
                const unsigned long long h = atomicAdd(&count[3], 1ull);
                if (h < kHugeRanges) huge[h] = item;
            }
        }
        return true;
    }
    // Whether the huge ranges are cut into parts (else each is folded by one block with the blocks' list).
    __device__ __forceinline__ bool cuts_huge(unsigned long long huge_count) const {
        return huge_from > 0 && huge_count <= kHugeRanges;
    }
};

// The parts of a huge range of `len` elements: kRangePartMin or more each, at most kHugeParts.
constexpr int64_t kRangePartMin = 8192;
__host__ __device__ __forceinline__ int64_t huge_parts(int64_t len) {
    const int64_t parts = len / kRangePartMin;
    return parts < 1 ? 1 : parts > kHugeParts ? kHugeParts : parts;
}

// Folds element r of the range at input offset `base` into v, the elements of a range read in increasing r (so
// fold_element's contract holds): through the Reducer's element step where it has one with positions (argmin and
// argmax: no compare of positions on a tie), else as seg_load's value combined.  (Ranges have no mask.)
template <class Red, class In>
__device__ __forceinline__ typename Red::V range_fold(const SegProblem &p, const typename Red::V &v, int64_t base,
                                                      int64_t r) {
    if constexpr (folds_at_positions<Red>::value && !takes_second<Red>::value)
        return Red::fold_at(v, static_cast<const In *>(p.in)[base + r * p.ir], r);
    else return Red::combine(v, seg_load<Red, In>(p, base, 0, r));
}

// Blocks an SM the thread kernel is held to (0: ptxas's choice): float32 argmin and argmax 5, 48 registers where
// ptxas takes 52 (H200, 2^26 over 7.9 million ranges of 1-16: 234 -> 219 us).  Not the others: any bound, even 1,
// changes ptxas's choice (an int64 argmax went from 64 to 90 registers and 291 to 315 us).
template <class Red, class In>
constexpr int range_thread_min_blocks() {
    return is_same<typename Red::V, ValueIndex<float>>::value && sizeof(In) == 4 ? 5 : 0;
}

// A thread per work item (G = 1: tiny ranges, and every column layout): kItems work items per step, every item's
// bounds, then every item's first element in flight together.  Its own kernel, holding only an item's input
// offset and length (the output's place is worked out again at the store): inside ranges_lanes_kernel the warp
// path's registers (66 a thread for a float32 sum) cut the occupancy that latency-bound tiny ranges need (H200,
// 2^26 float32 over 7.9 million ranges of 1-16: 221 us there, 145 here, a bare thread-per-range kernel 132).
template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock, range_thread_min_blocks<Red, In>())
    ranges_thread_kernel(SegProblem p, RangeSet g, LongRanges long_ranges, typename Red::V init) {
    using V = typename Red::V;
    constexpr int kItems = 4;
    const int64_t items = p.c0 * p.c1 * g.K, per_grid = int64_t(gridDim.x) * blockDim.x;
    for (int64_t item0 = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; item0 < items; item0 += kItems * per_grid) {
        int64_t base[kItems], len[kItems];
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            const int64_t item = item0 + u * per_grid;
            len[u] = -1;  // no such item, or a long range left to ranges_long_kernel
            base[u] = 0;
            if (item < items) {
                int64_t i0, k, i1, r0, r1;
                range_item(p, g, item, i0, k, i1);
                g.bounds(k, p.R, r0, r1);
                if (!long_ranges.take(item, r1 - r0, 0)) {
                    base[u] = i0 * p.is0 + i1 * p.is1 + r0 * p.ir;
                    len[u] = r1 - r0;
                }
            }
        }
        V v[kItems];
#pragma unroll
        for (int u = 0; u < kItems; u++) v[u] = 0 < len[u] ? seg_load<Red, In>(p, base[u], 0, 0) : Red::identity();
#pragma unroll
        for (int u = 0; u < kItems; u++) {
            for (int64_t r = 1; r < len[u]; r++) v[u] = range_fold<Red, In>(p, v[u], base[u], r);
            if (len[u] >= 0) {
                int64_t i0, k, i1;
                range_item(p, g, item0 + u * per_grid, i0, k, i1);
                range_store<Red>(p, g, i0, k, i1, v[u], init);
            }
        }
    }
}

// Short ranges (G = 2..16 lanes each): kItems work items per step, every item's bounds, then every item's first
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
            for (int64_t r = lg.sub + group; r < len[u]; r += group) v[u] = range_fold<Red, In>(p, v[u], base[u], r);
            fold_lanes<Red>(v[u], group);
            if (len[u] >= 0 && lg.sub == 0) range_store<Red>(p, g, i0[u], k[u], i1[u], v[u], init);
        }
    }
}

// G = `group` lanes (2..16, a power of two) per work item.
template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock) ranges_lanes_kernel(SegProblem p, RangeSet g, int group,
                                                                 LongRanges long_ranges, typename Red::V init) {
    ranges_short<Red, In>(p, g, LaneGroups(group), group, long_ranges, init);
}

// A warp per work item (medium ranges).  Its own kernel: beside ranges_short's arrays its registers were 66 a
// thread for a float32 sum, 43 alone.
template <class Red, class In>
__global__ void __launch_bounds__(kSegBlock) ranges_warp_kernel(SegProblem p, RangeSet g, LongRanges long_ranges,
                                                                typename Red::V init) {
    using V = typename Red::V;
    const LaneGroups lg(kWarp);
    const int64_t items = p.c0 * p.c1 * g.K;
    for (int64_t item = lg.first; item < items; item += lg.per_grid) {  // the whole warp takes the same item
        V v = Red::identity();
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        if (long_ranges.take(item, r1 - r0, lg.sub)) continue;
        v = fold_range<Red, In, kWarp>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, 0, r1 - r0, lg.sub, kWarp, v);
        fold_lanes<Red>(v, kWarp);
        if (lg.sub == 0) range_store<Red>(p, g, i0, k, i1, v, init);
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

// The huge ranges of LongRanges, `huge` of them: unit u of the grid's work is part j of huge range h (the units of
// a range in a row, huge_parts(length) of them), a block each in turn.  The block that finishes a range's last
// part folds the parts' values in order (deterministic: the cut depends on the length alone) and frees its ticket.
template <class Red, class In>
__device__ void ranges_huge(const SegProblem &p, const RangeSet &g, const LongRanges &long_ranges, int huge,
                            const typename Red::V &init) {
    using V = typename Red::V;
    static_assert(kHugeParts <= kRangeBlock, "a thread per part folds a range's parts");
    __shared__ int64_t first[kHugeRanges + 1];  // range h's units are [first[h], first[h + 1])
    __shared__ bool last;
    for (int h = threadIdx.x; h < huge; h += kRangeBlock) {
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, long_ranges.huge[h], i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        first[h + 1] = huge_parts(r1 - r0);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        first[0] = 0;
        for (int h = 0; h < huge; h++) first[h + 1] += first[h];
    }
    __syncthreads();
    V *partials = static_cast<V *>(long_ranges.huge_partials);
    for (int64_t u = blockIdx.x; u < first[huge]; u += gridDim.x) {
        int h = 0;
        while (first[h + 1] <= u) h++;
        const int64_t parts = first[h + 1] - first[h], j = u - first[h];
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, long_ranges.huge[h], i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        const int64_t len = r1 - r0;
        V v = fold_range<Red, In, kRangeBlock>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, len * j / parts,
                                               len * (j + 1) / parts, threadIdx.x, kRangeBlock, Red::identity());
        v = block_fold_warps<Red, kRangeBlock>(v);
        unsigned *ticket = long_ranges.huge_tickets + h / 4;
        const unsigned shift = 8 * (h % 4);  // a byte per range: kHugeParts < 256
        if (threadIdx.x == 0) {
            partials[h * kHugeParts + j] = v;
            __threadfence();
            last = ((atomicAdd(ticket, 1u << shift) >> shift) & 0xffu) == unsigned(parts - 1);
        }
        __syncthreads();
        if (last) {
            __threadfence();
            V w = threadIdx.x < parts ? load_cg(partials + h * kHugeParts + threadIdx.x) : Red::identity();
            w = block_fold_warps<Red, kRangeBlock>(w);
            if (threadIdx.x == 0) {
                range_store<Red>(p, g, i0, k, i1, w, init);
                atomicAnd(ticket, ~(0xffu << shift));
            }
        }
        __syncthreads();  // block_fold_warps' shared memory and `last` are reused by the next unit
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
    const unsigned long long huge_count = long_ranges.count[3];
    const bool cut = long_ranges.cuts_huge(huge_count);
    for (int64_t e = blockIdx.x; e < count; e += gridDim.x) {
        const int64_t item = long_ranges.items[long_ranges.capacity - 1 - e];
        int64_t i0, k, i1, r0, r1;
        range_item(p, g, item, i0, k, i1);
        g.bounds(k, p.R, r0, r1);
        if (cut && r1 - r0 >= long_ranges.huge_from) continue;  // ranges_huge's
        V v = fold_range<Red, In, kRangeBlock>(p, i0 * p.is0 + i1 * p.is1 + r0 * p.ir, 0, r1 - r0, threadIdx.x,
                                               kRangeBlock, Red::identity());
        v = block_fold_warps<Red, kRangeBlock>(v);
        if (threadIdx.x == 0) range_store<Red>(p, g, i0, k, i1, v, init);
        __syncthreads();
    }
    if (cut && huge_count > 0) ranges_huge<Red, In>(p, g, long_ranges, int(huge_count), init);
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(ticket, 1u) == gridDim.x - 1) {  // every block has read the counts
            long_ranges.count[0] = long_ranges.count[1] = long_ranges.count[3] = 0;
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
