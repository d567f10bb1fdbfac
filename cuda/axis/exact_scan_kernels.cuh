// exact_scan_kernels.cuh -- the scan variant "exact" (issue 41), compiled on first use (abi/jit.h:
// GR_JIT_EXACT_SCAN; the host half is axis/scan_segments_exact.cu): the cumsum and nancumsum of float16, bfloat16,
// float32 and float64 along any axis, every element its exact prefix sum rounded once (primitives/exact_scan.cuh),
// so its bits do not depend on the layout, the launch, the batch or the device.
//
// Each segment (i0, i1) of the axis layout is cut into tiles of kTile elements (a block each, in turn), three
// launches where a segment has more than one tile:
//   exact_scan_totals_kernel   each tile's exact sum as digits, and its flags, into the workspace;
//   exact_scan_carries_kernel  a block per (segment, digit): the digit's exclusive sums over the segment's tiles,
//                              in place (digits add word by word, the flags OR): each tile's prefix P;
//   exact_scan_kernel          each tile from its P: the tile in shared memory, a thread's kItems consecutive
//                              elements summed in 128 bits at the tile's anchor, a block scan of the threads' sums,
//                              then every element's prefix rounded (exact_prefix_bits); an element that rounding
//                              leaves undecided is rounded from P's digits, and a tile whose prefixes do not fit
//                              128 bits is walked by a warp's lanes with digits of their own (adversarial data:
//                              the full exponent range in one tile).
// The tile's input is read coalesced into shared memory (elements k, k + 256, ... of it per thread) and its result
// written the same way.  Workspace (tiles > 1): int64 words[segment][word][tile], word < kDigits a digit, word
// kDigits the flags (kExact* | kExactNotNegativeZero).
#pragma once
#include "primitives/exact_scan.cuh"
#include "primitives/warp.cuh"
#include "variants/exact_sum_kernels.cuh"

namespace gr {

// The axis layout (gr_segments, strides in elements): segment s = (i0, i1), s = i0 * c1 + i1; element r of it at
// in[i0 * is0 + i1 * is1 + r * ir], out[i0 * os0 + i1 * os1 + r * orr].
struct ExactScanLayout {
    int64_t c0, c1;
    int64_t is0, is1, ir;
    int64_t os0, os1, orr;
    int64_t R;
    int64_t tiles;  // per segment
    int exclusive;
};

template <class T>
struct ExactScanShape {
    static constexpr int kThreads = 256;
    static constexpr int kItems = sizeof(T) == 8 ? 8 : 16;  // consecutive elements a thread: 16 KB of T a tile
    static constexpr int kTile = kThreads * kItems;          // at most 2^13: exact_prefix_fits
    static constexpr int kWords = ExactFormat<T>::kDigits + 1;
    static constexpr int kSlowLanes = sizeof(T) == 8 ? 16 : 32;  // the slow tile's lanes (their digits in shared)
    // the scan kernel's blocks an SM: at most 64 registers a thread (the slow paths' digits would take 255 and
    // leave one block an SM; they spill instead)
    static constexpr int kBlocksPerSm = 4;
};
static_assert(ExactScanShape<float>::kTile <= 8192 && ExactScanShape<double>::kTile <= 8192, "exact_prefix_fits");

// Element i of a tile in shared memory: a gap after every 32, so that a thread's kItems consecutive elements (thread
// t from t * kItems) lie in distinct banks across a warp (2-, 4- and 8-byte elements; unpadded: 16-way conflicts,
// 83% of the scan kernel's shared wavefronts on an H200).
__host__ __device__ __forceinline__ int exact_tile_index(int i) { return i + (i >> 5); }
template <int kTile>
struct ExactPadded {
    static constexpr int kSize = kTile + kTile / 32;
};

#ifndef __CUDACC_RTC__
// The name expressions of the program's kernels: what scan_segments_exact.cu launches and `warm` compiles.
// which: 0 totals, 1 carries (of the accumulating type), 2 the scan.
inline void exact_scan_kernel_name(int which, gr_dtype d, gr_op op, char *buf, size_t size) {
    char type[64];
    if (which == 1) {
        std::snprintf(buf, size, "gr::exact_scan_carries_kernel<%s>", d == GR_FLOAT64 ? "double" : "float");
        return;
    }
    dtype_type_name(d, type, sizeof type);
    std::snprintf(buf, size, "gr::exact_scan_%s<%s, (gr_op)%d>", which == 0 ? "totals_kernel" : "kernel", type,
                  int(op));
}
#endif

// An element's flags: its NaN and infinity (a NaN of the nan form none: it counts as +0.0), and
// kExactNotNegativeZero unless it is -0.0.
template <gr_op kOp, class T>
__device__ __forceinline__ unsigned exact_scan_flags(const ExactParts<T> &p) {
    unsigned f = (p.finite && p.m == 0 && p.negative) ? 0u : kExactNotNegativeZero;
    if (!p.finite && !(kOp == GR_OP_NANSUM && p.nan)) f |= exact_flag(p);
    return f;
}

// An element's value at anchor a, in L: __int128, or int64_t where the tile's sums fit 62 bits (0 for a zero, NaN or
// infinity).
template <class L, class T>
__device__ __forceinline__ L exact_scan_value(const ExactParts<T> &p, int a) {
    if (!p.finite || p.m == 0) return 0;
    const L v = L(p.m) << (p.pos - a);
    return p.negative ? -v : v;
}

__device__ __forceinline__ __int128 exact_shfl_down(__int128 v, int offset) {
    const uint64_t lo = __shfl_down_sync(0xffffffffu, uint64_t(v), offset);
    const uint64_t hi = __shfl_down_sync(0xffffffffu, uint64_t((unsigned __int128)v >> 64), offset);
    return (__int128)(((unsigned __int128)hi << 64) | lo);
}
__device__ __forceinline__ __int128 exact_shfl_up(__int128 v, int offset) {
    const uint64_t lo = __shfl_up_sync(0xffffffffu, uint64_t(v), offset);
    const uint64_t hi = __shfl_up_sync(0xffffffffu, uint64_t((unsigned __int128)v >> 64), offset);
    return (__int128)(((unsigned __int128)hi << 64) | lo);
}
__device__ __forceinline__ int64_t exact_shfl_down(int64_t v, int offset) {
    return __shfl_down_sync(0xffffffffu, (long long)v, offset);
}
__device__ __forceinline__ int64_t exact_shfl_up(int64_t v, int offset) {
    return __shfl_up_sync(0xffffffffu, (long long)v, offset);
}

// The tile's statistics over a block: the smallest and largest `pos` of its nonzero finite elements, the flags.
struct ExactTileStats {
    int min_pos, max_pos;
    unsigned flags;
};

// Shared memory of the tile kernels.
template <class T>
struct ExactScanStorage {
    using S = ExactScanShape<T>;
    T tile[ExactPadded<S::kTile>::kSize];  // element i at exact_tile_index(i)
    ExactTileStats warp_stats[S::kThreads / kWarp];
    ExactTileStats stats;
    unsigned long long warp_lo[S::kThreads / kWarp], warp_hi[S::kThreads / kWarp];
    unsigned warp_flags[S::kThreads / kWarp];
    int64_t p[S::kWords];  // the tile's prefix P, normalized (exact_scan_kernel)
    unsigned long long q_lo, q_hi;
    ExactTileSplit split;  // P's floor at the anchor for exact_split_prefix_bits
    int anchor;
    bool fits, frac;
};

// The stats of the block's tile (tile[0, count)), thread t's kItems elements from t * kItems, into st.stats.
template <gr_op kOp, class T>
__device__ __forceinline__ void exact_tile_stats(ExactScanStorage<T> &st, int count) {
    using S = ExactScanShape<T>;
    ExactTileStats s{1 << 30, -1, 0u};
    const int first = threadIdx.x * S::kItems;
#pragma unroll 4
    for (int k = 0; k < S::kItems; k++) {
        if (first + k >= count) break;
        const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(first + k)]);
        s.flags |= exact_scan_flags<kOp>(p);
        if (p.finite && p.m) {
            s.min_pos = p.pos < s.min_pos ? p.pos : s.min_pos;
            s.max_pos = p.pos > s.max_pos ? p.pos : s.max_pos;
        }
    }
    for (int offset = 16; offset > 0; offset /= 2) {
        const int lo = __shfl_xor_sync(0xffffffffu, s.min_pos, offset), hi = __shfl_xor_sync(0xffffffffu, s.max_pos, offset);
        s.min_pos = lo < s.min_pos ? lo : s.min_pos;
        s.max_pos = hi > s.max_pos ? hi : s.max_pos;
        s.flags |= __shfl_xor_sync(0xffffffffu, s.flags, offset);
    }
    if (threadIdx.x % kWarp == 0) st.warp_stats[threadIdx.x / kWarp] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        ExactTileStats all = st.warp_stats[0];
        for (int w = 1; w < S::kThreads / kWarp; w++) {
            const ExactTileStats &o = st.warp_stats[w];
            all.min_pos = o.min_pos < all.min_pos ? o.min_pos : all.min_pos;
            all.max_pos = o.max_pos > all.max_pos ? o.max_pos : all.max_pos;
            all.flags |= o.flags;
        }
        st.stats = all;
    }
    __syncthreads();
}

// The tile [r0, r0 + count) of segment s into st.tile, widened to T, read coalesced.
template <class In, class T>
__device__ __forceinline__ void exact_load_tile(ExactScanStorage<T> &st, const In *in, const ExactScanLayout &g,
                                                int64_t base, int64_t r0, int count) {
    for (int k = threadIdx.x; k < count; k += ExactScanShape<T>::kThreads)
        st.tile[exact_tile_index(k)] = exact_widen(in[base + (r0 + k) * g.ir]);
    __syncthreads();
}

__device__ __forceinline__ int64_t exact_segment_base(const ExactScanLayout &g, int64_t s, int64_t stride0,
                                                      int64_t stride1) {
    const int64_t i0 = g.c1 == 1 ? s : s / g.c1, i1 = g.c1 == 1 ? 0 : s - i0 * g.c1;
    return i0 * stride0 + i1 * stride1;
}

template <class T>
__device__ __forceinline__ bool exact_tile_sums_narrow(const ExactTileStats &stats, int a) {
    return exact_tile_sums_narrow<T>(stats.max_pos, stats.max_pos >= 0, a);
}

// Each warp's sum of its threads' kItems consecutive elements at anchor a, in L, into st.warp_lo/hi (128 bits).
template <class L, class T>
__device__ __forceinline__ void exact_warp_sums(ExactScanStorage<T> &st, int count, int a) {
    using S = ExactScanShape<T>;
    const int first = threadIdx.x * S::kItems;
    L sum = 0;
    for (int k = 0; k < S::kItems && first + k < count; k++)
        sum += exact_scan_value<L>(exact_parts(st.tile[exact_tile_index(first + k)]), a);
    for (int offset = 16; offset > 0; offset /= 2) sum += exact_shfl_down(sum, offset);
    if (threadIdx.x % kWarp == 0) {
        const __int128 wide = sum;
        st.warp_lo[threadIdx.x / kWarp] = uint64_t(wide);
        st.warp_hi[threadIdx.x / kWarp] = uint64_t((unsigned __int128)wide >> 64);
    }
}

// Each tile's exact sum and flags into words[s][word][tile] (a segment of more than one tile).  Held to 32
// registers a float32 thread (8 blocks an SM): a tile spread over the full exponent range is summed by thread 0
// alone, so the blocks resident at once set that data's speed (H200, 2^24 float32 of the full range: 40 registers,
// 6 blocks, took the call from 4.1 to 5.8 ms).
template <class T>
constexpr int exact_totals_blocks_per_sm() {
    return sizeof(T) == 4 ? 8 : 0;
}
template <class In, gr_op kOp, class T = typename ExactInput<In>::Acc>
__global__ void __launch_bounds__(ExactScanShape<T>::kThreads, exact_totals_blocks_per_sm<T>())
    exact_scan_totals_kernel(const In *in, ExactScanLayout g, int64_t *words) {
    using S = ExactScanShape<T>;
    __shared__ ExactScanStorage<T> st;
    const int64_t units = g.c0 * g.c1 * g.tiles;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
        const int64_t s = u / g.tiles, tile = u - s * g.tiles, r0 = tile * S::kTile;
        const int count = int(g.R - r0 < S::kTile ? g.R - r0 : S::kTile);
        exact_load_tile<In>(st, in, g, exact_segment_base(g, s, g.is0, g.is1), r0, count);
        exact_tile_stats<kOp>(st, count);
        const ExactTileStats stats = st.stats;
        const bool any = stats.max_pos >= 0;
        const int a = any ? stats.min_pos : 0;
        if (exact_prefix_fits<T>(-1, stats.max_pos, any, a)) {  // the usual case: 128 bits at the tile's anchor
            if (exact_tile_sums_narrow<T>(stats, a)) exact_warp_sums<int64_t>(st, count, a);
            else exact_warp_sums<__int128>(st, count, a);
            __syncthreads();
        }
        if (threadIdx.x == 0) {
            ExactDigits<T> d;
            d.clear();
            if (exact_prefix_fits<T>(-1, stats.max_pos, any, a)) {
                __int128 sum = 0;
                for (int w = 0; w < S::kThreads / kWarp; w++)
                    sum += (__int128)(((unsigned __int128)st.warp_hi[w] << 64) | st.warp_lo[w]);
                const bool negative = sum < 0;
                const unsigned __int128 m = negative ? (unsigned __int128)(-sum) : (unsigned __int128)sum;
                if (m) d.add_scaled(uint64_t(m), uint64_t(m >> 64), a, negative);
            } else {  // the full exponent range in one tile: element by element
                for (int k = 0; k < count; k++) {
                    const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(k)]);
                    if (p.finite && p.m) d.add_element(p.m, p.pos, p.negative);
                }
            }
            d.normalize();
            int64_t *w = words + s * S::kWords * g.tiles + tile;
            for (int k = 0; k < ExactFormat<T>::kDigits; k++) w[k * g.tiles] = d.digit[k];
            w[ExactFormat<T>::kDigits * g.tiles] = int64_t(stats.flags);
        }
        __syncthreads();  // the storage is the next tile's
    }
}

// Block (segment, word): that word's exclusive scan over the segment's tiles, in place: a sum for a digit, an OR
// for the flags.  Sums of normalized digits stay far below 2^63 (2^32 a tile).
template <class T>
__global__ void __launch_bounds__(256) exact_scan_carries_kernel(int64_t *words, int64_t tiles) {
    constexpr int kThreads = 256, kPer = 16, kWords = ExactScanShape<T>::kWords;
    __shared__ int64_t warp_sums[kThreads / kWarp];
    __shared__ int64_t carry;
    const bool flags = blockIdx.x % kWords == kWords - 1;
    int64_t *w = words + int64_t(blockIdx.x) * tiles;
    if (threadIdx.x == 0) carry = 0;
    __syncthreads();
    for (int64_t base = 0; base < tiles; base += int64_t(kThreads) * kPer) {
        const int64_t first = base + int64_t(threadIdx.x) * kPer;
        int64_t v[kPer], mine = 0;
#pragma unroll
        for (int k = 0; k < kPer; k++) {
            v[k] = first + k < tiles ? w[first + k] : 0;
            mine = flags ? (mine | v[k]) : mine + v[k];
        }
        // the threads' exclusive prefix: a warp scan, the warps before, the carry from the tiles before
        const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
        int64_t incl = mine;
        for (int offset = 1; offset < kWarp; offset *= 2) {
            const int64_t o = __shfl_up_sync(0xffffffffu, incl, offset);
            if (lane >= offset) incl = flags ? (incl | o) : incl + o;
        }
        const int64_t up = __shfl_up_sync(0xffffffffu, incl, 1);
        if (lane == kWarp - 1) warp_sums[warp] = incl;
        __syncthreads();
        int64_t run = carry;
        for (int i = 0; i < warp; i++) run = flags ? (run | warp_sums[i]) : run + warp_sums[i];
        if (flags) run |= lane ? up : 0;
        else run += incl - mine;
        __syncthreads();  // every thread has read the carry
        if (threadIdx.x == kThreads - 1) carry = flags ? (run | mine) : run + mine;
#pragma unroll
        for (int k = 0; k < kPer; k++) {
            if (first + k < tiles) w[first + k] = run;
            run = flags ? (run | v[k]) : run + v[k];
        }
        __syncthreads();
    }
}

// Thread 0's work on a tile's prefix: P normalized in place, the tile's anchor, whether its prefixes fit 128 bits,
// P split there and for exact_split_prefix_bits (out of line: P's digits are 68 words for float64).
template <class T>
__device__ __noinline__ void exact_tile_prefix(ExactScanStorage<T> &st) {
    using F = ExactFormat<T>;
    ExactDigits<T> d;
    for (int k = 0; k < F::kDigits; k++) d.digit[k] = st.p[k];
    d.normalize();
    for (int k = 0; k < F::kDigits; k++) st.p[k] = d.digit[k];
    const ExactTileStats stats = st.stats;
    const bool any = stats.max_pos >= 0;
    const int top = exact_split<F::kDigits>(d.digit, 0).top;
    const int a = exact_tile_anchor<T>(top, exact_low_bit<F::kDigits>(d.digit), stats.min_pos, stats.max_pos, any);
    const ExactSplit split = exact_split<F::kDigits>(d.digit, a);
    st.anchor = a;
    st.fits = exact_prefix_fits<T>(top, stats.max_pos, any, a);
    st.frac = split.frac;
    st.q_lo = uint64_t(split.q);
    st.q_hi = uint64_t((unsigned __int128)split.q >> 64);
    st.split = exact_tile_split<T>(split.q, stats.max_pos, any, a);
}

// Out of line, so that their digits' registers and spills stay out of the fast path's (float64: 68 words).
// An element the 128 bits leave undecided: P's normalized digits plus the tile's part l x 2^a, rounded.
template <class Target, class T>
__device__ __noinline__ typename Target::Bits exact_undecided_bits(const int64_t *p, __int128 l, int a) {
    ExactDigits<T> d;
    for (int i = 0; i < ExactFormat<T>::kDigits; i++) d.digit[i] = p[i];
    return exact_prefix_bits_from_digits<Target, T>(d, l, a);
}

// A tile whose prefixes do not fit 128 bits (the full exponent range in one tile), by the first kSlowLanes
// threads: each lane a run of consecutive elements with its own digits, the lanes' starts summed in order by lane
// 0 (in `lanes`), then each lane's prefixes rounded from its digits into `result`.
template <gr_op kOp, class T, class Target>
__device__ __noinline__ void exact_slow_tile(ExactScanStorage<T> &st, int64_t (*lanes)[ExactScanShape<T>::kWords],
                                             typename Target::Bits *result, int count, int64_t r0, bool exclusive,
                                             unsigned p_flags) {
    using S = ExactScanShape<T>;
    using F = ExactFormat<T>;
    using Bits = typename Target::Bits;
    constexpr int kRun = S::kTile / S::kSlowLanes;
    const int lane = threadIdx.x, first = lane * kRun;
    ExactDigits<T> d;
    d.clear();
    unsigned f = 0;
    for (int k = first; k < first + kRun && k < count; k++) {
        const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(k)]);
        if (p.finite && p.m) d.add_element(p.m, p.pos, p.negative);
        f |= exact_scan_flags<kOp>(p);
    }
    for (int i = 0; i < F::kDigits; i++) lanes[lane][i] = d.digit[i];
    lanes[lane][F::kDigits] = int64_t(f);
    __syncwarp(S::kSlowLanes == 32 ? 0xffffffffu : 0xffffu);
    if (lane == 0) {
        int64_t acc[S::kWords];
        for (int i = 0; i < F::kDigits; i++) acc[i] = st.p[i];
        acc[F::kDigits] = int64_t(p_flags);
        for (int j = 0; j < S::kSlowLanes; j++)
            for (int i = 0; i < S::kWords; i++) {
                const int64_t v = lanes[j][i];
                lanes[j][i] = acc[i];
                acc[i] = i == F::kDigits ? (acc[i] | v) : acc[i] + v;
            }
    }
    __syncwarp(S::kSlowLanes == 32 ? 0xffffffffu : 0xffffu);
    for (int i = 0; i < F::kDigits; i++) d.digit[i] = lanes[lane][i];
    f = unsigned(lanes[lane][F::kDigits]);
    for (int k = first; k < first + kRun && k < count; k++) {
        const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(k)]);
        const bool empty = exclusive && r0 + k == 0;
        Bits bits;
        if (exclusive) {
            ExactDigits<T> copy = d;
            if (!exact_prefix_special<Target>(f, empty, &bits))
                bits = exact_prefix_bits_from_digits<Target, T>(copy, 0, 0);
        }
        if (p.finite && p.m) d.add_element(p.m, p.pos, p.negative);
        f |= exact_scan_flags<kOp>(p);
        if (!exclusive) {
            ExactDigits<T> copy = d;
            if (!exact_prefix_special<Target>(f, empty, &bits))
                bits = exact_prefix_bits_from_digits<Target, T>(copy, 0, 0);
        }
        result[exact_tile_index(k)] = bits;
    }
}

// A tile whose prefixes fit 128 bits: thread t's kItems consecutive elements summed in L (int64_t where the tile is
// narrow, else __int128) from the tile's start, a block scan of the sums and flags, then each element's prefix
// P + l x 2^a rounded (narrow: exact_split_prefix_bits, else exact_prefix_bits), an element left undecided from
// P's digits.
template <gr_op kOp, class T, class Target, class L>
__device__ __forceinline__ void exact_tile_fits(ExactScanStorage<T> &st, typename Target::Bits *result, int count,
                                                int64_t r0, bool exclusive, unsigned p_flags) {
    using S = ExactScanShape<T>;
    using Bits = typename Target::Bits;
    const int a = st.anchor;
    const int first = threadIdx.x * S::kItems;
    L mine = 0;
    unsigned mine_flags = 0;
    for (int k = 0; k < S::kItems && first + k < count; k++) {
        const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(first + k)]);
        mine += exact_scan_value<L>(p, a);
        mine_flags |= exact_scan_flags<kOp>(p);
    }
    L incl = mine;
    unsigned incl_flags = mine_flags;
    for (int offset = 1; offset < kWarp; offset *= 2) {
        const L o = exact_shfl_up(incl, offset);
        const unsigned of = __shfl_up_sync(0xffffffffu, incl_flags, offset);
        if (threadIdx.x % kWarp >= offset) {
            incl += o;
            incl_flags |= of;
        }
    }
    const int warp = threadIdx.x / kWarp;
    if (threadIdx.x % kWarp == kWarp - 1) {
        const __int128 wide = incl;
        st.warp_lo[warp] = uint64_t(wide);
        st.warp_hi[warp] = uint64_t((unsigned __int128)wide >> 64);
        st.warp_flags[warp] = incl_flags;
    }
    __syncthreads();
    const unsigned up_flags = __shfl_up_sync(0xffffffffu, incl_flags, 1);
    L l = incl - mine;  // the tile's elements before this thread's
    unsigned f = p_flags | (threadIdx.x % kWarp ? up_flags : 0u);
    for (int w = 0; w < warp; w++) {
        l += L((__int128)(((unsigned __int128)st.warp_hi[w] << 64) | st.warp_lo[w]));
        f |= st.warp_flags[w];
    }
    const ExactTileSplit split = st.split;
    const bool frac = st.frac;
    const __int128 pq = (__int128)(((unsigned __int128)st.q_hi << 64) | st.q_lo);
    for (int k = 0; k < S::kItems && first + k < count; k++) {
        const ExactParts<T> p = exact_parts(st.tile[exact_tile_index(first + k)]);
        const L l_before = l;
        const unsigned f_before = f;
        l += exact_scan_value<L>(p, a);
        f |= exact_scan_flags<kOp>(p);
        const L q = exclusive ? l_before : l;
        const unsigned flags = exclusive ? f_before : f;
        const bool empty = exclusive && r0 + first + k == 0;
        Bits bits;
        if (!exact_prefix_special<Target>(flags, empty, &bits)) {
            bool decided;
            if constexpr (sizeof(L) == 8) decided = exact_split_prefix_bits<Target, T>(split, q, frac, a, &bits);
            else decided = exact_prefix_bits<Target, T>(pq + q, frac, a, &bits);
            if (!decided) bits = exact_undecided_bits<Target, T>(st.p, __int128(q), a);  // P's digits and the tile's part
        }
        result[exact_tile_index(first + k)] = bits;
    }
}

// A float32 tile too wide for 64-bit sums (its exponents spread over 25 binades or more): out of line, so that the
// 128-bit registers stay out of the narrow path's.
template <gr_op kOp, class T, class Target>
__device__ __noinline__ void exact_tile_fits_wide(ExactScanStorage<T> &st, typename Target::Bits *result, int count,
                                                  int64_t r0, bool exclusive, unsigned p_flags) {
    exact_tile_fits<kOp, T, Target, __int128>(st, result, count, r0, exclusive, p_flags);
}

// Every tile of every segment from its prefix P (words, scanned; null for one tile a segment): see the top.
template <class In, gr_op kOp, class T = typename ExactInput<In>::Acc>
__global__ void __launch_bounds__(ExactScanShape<T>::kThreads, ExactScanShape<T>::kBlocksPerSm)
    exact_scan_kernel(const In *in, In *out, ExactScanLayout g, const int64_t *words) {
    using S = ExactScanShape<T>;
    using F = ExactFormat<T>;
    using Target = typename ExactInput<In>::Target;
    using Bits = typename Target::Bits;
    static_assert(sizeof(Bits) == sizeof(In), "the result's bits");
    __shared__ ExactScanStorage<T> st;
    __shared__ Bits result[ExactPadded<S::kTile>::kSize];  // element i at exact_tile_index(i)
    __shared__ int64_t lanes[S::kSlowLanes][S::kWords];  // the slow tile's lanes: their starting digits and flags
    const int64_t units = g.c0 * g.c1 * g.tiles;
    for (int64_t u = blockIdx.x; u < units; u += gridDim.x) {
        const int64_t s = u / g.tiles, tile = u - s * g.tiles, r0 = tile * S::kTile;
        const int count = int(g.R - r0 < S::kTile ? g.R - r0 : S::kTile);
        if (threadIdx.x < S::kWords) st.p[threadIdx.x] = words ? words[(s * S::kWords + threadIdx.x) * g.tiles + tile] : 0;
        exact_load_tile<In>(st, in, g, exact_segment_base(g, s, g.is0, g.is1), r0, count);
        exact_tile_stats<kOp>(st, count);
        const unsigned p_flags = unsigned(st.p[F::kDigits]);
        if (threadIdx.x == 0) exact_tile_prefix(st);
        __syncthreads();
        const bool exclusive = g.exclusive != 0;
        if (st.fits) {
            if constexpr (sizeof(T) == 4) {
                if (st.split.narrow) exact_tile_fits<kOp, T, Target, int64_t>(st, result, count, r0, exclusive, p_flags);
                else exact_tile_fits_wide<kOp, T, Target>(st, result, count, r0, exclusive, p_flags);
            } else {
                exact_tile_fits<kOp, T, Target, __int128>(st, result, count, r0, exclusive, p_flags);
            }
        } else if (threadIdx.x < S::kSlowLanes) {
            exact_slow_tile<kOp, T, Target>(st, lanes, result, count, r0, exclusive, p_flags);
        }
        __syncthreads();
        const int64_t base = exact_segment_base(g, s, g.os0, g.os1);
        Bits *o = reinterpret_cast<Bits *>(out);
        for (int k = threadIdx.x; k < count; k += S::kThreads) o[base + (r0 + k) * g.orr] = result[exact_tile_index(k)];
        __syncthreads();  // the storage is the next tile's
    }
}

}  // namespace gr
