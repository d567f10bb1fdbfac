// scan_block.cuh -- the block layer of the scans (layer 2 of 3: warp -> block -> device).
//
// Everything here works inside one thread block and knows nothing about the grid:
//   * scan_neutral            the element scans pad with and start from
//   * warp_inclusive_scan     Kogge-Stone in registers with __shfl_up_sync (the warp layer, warp.cuh's style)
//   * BlockScanShfl           block scan of one value per thread: warp scans, then a scan of the warp totals
//   * block_scan_kogge_stone  Hillis-Steele over shared memory, one element per thread
//   * block_scan_brent_kung   Blelloch up-sweep/down-sweep over bank-conflict-free padded shared memory
//   * thread_fold/thread_scan the serial part of a coarsened tile, in registers
//   * TileIO                  coalesced 16-byte loads/stores of a tile, transposed through shared memory into the
//                             "blocked" arrangement (each thread owns kItems consecutive elements)
// Operand order is kept left to right everywhere (op(earlier, later)), so nothing here relies on commutativity.
#pragma once
#include "primitives/traits.cuh"
#include <cstdint>
#include "primitives/types.cuh"
#include "primitives/warp.cuh"

namespace gr {

// Op::identity, except for a floating-point sum: -0.0 there.  -0.0 is IEEE's true additive identity
// (-0.0 + x == x for every x, while +0.0 + -0.0 == +0.0), so padding and prefixes that start from it never
// change a result: cumsum([-0.0, ...]) keeps its -0.0 as NumPy's does.  The identity an exclusive scan writes
// first is still Op::identity (+0.0).
template <class Op, class T>
__host__ __device__ __forceinline__ constexpr T scan_neutral() {
    if constexpr (is_base_of<Sum, Op>::value && is_floating_point<T>::value) return T(-0.0);
    else return Op::template identity<T>();
}

// ---- warp ----

// Inclusive scan across the 32 lanes (Kogge-Stone in registers): at distance 1, 2, 4, 8, 16 every lane adds
// what the lane that far below holds.  5 steps, 31 x 5 operations; every lane must call it.
template <class Op, class T>
__device__ __forceinline__ T warp_inclusive_scan(T v, unsigned lane) {
#pragma unroll
    for (int offset = 1; offset < kWarp; offset <<= 1) {
        const T below = __shfl_up_sync(kFullMask, v, offset);
        if (lane >= unsigned(offset)) v = Op()(below, v);
    }
    return v;
}

// ---- block: one value per thread ----

// Block scan with shuffles: each warp scans its 32 values in registers, the last lane of each warp puts the
// warp's total in shared memory, and after one barrier every thread folds the totals of the warps before its
// own (at most 31 broadcast reads: cheaper than a second barrier for a warp-0 scan of the totals).
template <class Op, int kThreads, class T>
struct BlockScanShfl {
    static_assert(kThreads % kWarp == 0 && kThreads <= 1024, "block size must be a multiple of 32, at most 1024");
    static constexpr int kWarps = kThreads / kWarp;
    struct Storage {
        T warp_total[kWarps];
    };
    // excl: op over the values of the threads before this one (neutral for thread 0);
    // aggregate: op over all threads' values, in every thread.  Contains one __syncthreads; the caller
    // synchronises again before `s` is reused.
    __device__ static void exclusive_scan(T v, T &excl, T &aggregate, Storage &s) {
        const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
        const T incl = warp_inclusive_scan<Op>(v, lane);
        T warp_excl = __shfl_up_sync(kFullMask, incl, 1);
        if (lane == 0) warp_excl = scan_neutral<Op, T>();
        if (lane == kWarp - 1) s.warp_total[warp] = incl;
        __syncthreads();
        T all = s.warp_total[0], before = scan_neutral<Op, T>();
#pragma unroll
        for (int w = 1; w < kWarps; ++w) {
            if (w == int(warp)) before = all;
            all = Op()(all, s.warp_total[w]);
        }
        excl = Op()(before, warp_excl);
        aggregate = all;
    }
};

// Hillis-Steele / Kogge-Stone (seed 001 "interleaved reduction trees"): at step d every element adds the one
// 2^d places to its left.  log2(kThreads) steps but O(n log n) operations.  Double-buffered: each step reads one
// buffer and writes the other, so a single barrier per step suffices (in place would need read, barrier, write,
// barrier).  Returns this thread's inclusive value; on return buf[*result] holds all of them.
template <class Op, int kThreads, class T>
__device__ __forceinline__ T block_scan_kogge_stone(T v, T (&buf)[2][kThreads], int *result) {
    const int tid = threadIdx.x;
    int cur = 0;
    buf[cur][tid] = v;
    __syncthreads();
#pragma unroll
    for (int offset = 1; offset < kThreads; offset <<= 1) {
        if (tid >= offset) v = Op()(buf[cur][tid - offset], v);
        buf[cur ^ 1][tid] = v;
        cur ^= 1;
        __syncthreads();
    }
    *result = cur;
    return v;
}

// Shared-memory slot of element i with one padding element after every 128 bytes (32 banks x 4 bytes): the
// strided accesses of the trees and of the tile transposes then fall into different banks (GPU Gems 3,
// ch. 39, CONFLICT_FREE_OFFSET, in bytes rather than in 4-byte words so that 8-byte types are covered too).
template <class T>
__host__ __device__ __forceinline__ constexpr int padded_slot(int i) {
    return i + i / int(128 / sizeof(T));
}

// Blelloch / Brent-Kung (seed 001 "Blelloch scan"): the up-sweep builds a reduction tree in place
// (s[k] += s[k - 2^d] at the right child of every pair), the root is replaced by the neutral element, and the
// down-sweep pushes prefixes back down (left child := parent prefix, right child := parent prefix + left sum).
// O(n) operations, 2 log2(n) steps.  s holds kN = 2 x kThreads values at padded_slot positions; on return it
// holds the exclusive scan, and the total is returned (in every thread).
template <class Op, int kThreads, class T>
__device__ __forceinline__ T block_scan_brent_kung(T *s) {
    constexpr int kN = 2 * kThreads;
    const int tid = threadIdx.x;
    int offset = 1;
#pragma unroll
    for (int d = kN / 2; d > 0; d >>= 1) {  // up-sweep
        __syncthreads();
        if (tid < d) {
            const int left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
            s[padded_slot<T>(right)] = Op()(s[padded_slot<T>(left)], s[padded_slot<T>(right)]);
        }
        offset <<= 1;
    }
    __syncthreads();
    const T total = s[padded_slot<T>(kN - 1)];
    __syncthreads();  // every thread has read the total before the root is cleared
    if (tid == 0) s[padded_slot<T>(kN - 1)] = scan_neutral<Op, T>();
#pragma unroll
    for (int d = 1; d < kN; d <<= 1) {  // down-sweep
        offset >>= 1;
        __syncthreads();
        if (tid < d) {
            const int left = offset * (2 * tid + 1) - 1, right = offset * (2 * tid + 2) - 1;
            const T left_sum = s[padded_slot<T>(left)], prefix = s[padded_slot<T>(right)];
            s[padded_slot<T>(left)] = prefix;
            s[padded_slot<T>(right)] = Op()(prefix, left_sum);
        }
    }
    __syncthreads();
    return total;
}

// ---- thread: the serial part of a coarsened tile ----

template <class Op, int N, class T>
__device__ __forceinline__ T thread_fold(const T (&x)[N]) {
    T r = x[0];
#pragma unroll
    for (int i = 1; i < N; ++i) r = Op()(r, x[i]);
    return r;
}

// x[i] := op(prefix, x[0..i]) (inclusive) or op(prefix, x[0..i-1]) (exclusive).
template <class Op, int N, class T>
__device__ __forceinline__ void thread_scan(T (&x)[N], T prefix, bool exclusive) {
    T r = prefix;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        const T next = Op()(r, x[i]);
        x[i] = exclusive ? r : next;
        r = next;
    }
}

// x[i] := v for a run-time i without indexing the register array dynamically (which would put it in local memory).
template <int N, class T>
__device__ __forceinline__ void set_item(T (&x)[N], int i, T v) {
#pragma unroll
    for (int k = 0; k < N; ++k)
        if (k == i) x[k] = v;
}

// ---- tile I/O: 16-byte vectors in global memory, kItems consecutive elements per thread in registers ----

template <class T>
__device__ __forceinline__ bool aligned16(const T *p) {
    return reinterpret_cast<uintptr_t>(p) % 16 == 0;
}

// A tile is kThreads x kItems elements; thread t owns tile positions [t*kItems, (t+1)*kItems) ("blocked").
// Global memory wants the opposite ("striped": consecutive lanes, consecutive addresses), so each warp moves its
// own 32 x kItems segment through a private shared-memory buffer: striped 16-byte loads -> buffer -> blocked
// reads, and back for the stores.  Only __syncwarp is needed, never a block barrier.
//
// Tile position p is global element `start + p`; only positions [lo, hi) exist (the first tile may begin before
// element 0 so that every other tile starts on a 16-byte boundary, the last one may end early).  A full tile
// whose first element is 16-byte aligned moves in vectors; any other tile element by element (still coalesced).
template <int kThreads, int kItems, class In, class Out>
struct TileIO {
    static constexpr int kTile = kThreads * kItems;
    static constexpr int kWarpItems = kWarp * kItems;
    static constexpr int kInLanes = Vec16<In>::kLanes, kOutLanes = Vec16<Out>::kLanes;
    static_assert(kThreads % kWarp == 0, "whole warps");
    static_assert(kItems % kInLanes == 0 && kItems % kOutLanes == 0, "a thread's items are whole 16-byte vectors");
    static constexpr size_t kInBytes = size_t(padded_slot<In>(kWarpItems)) * sizeof(In);
    static constexpr size_t kOutBytes = size_t(padded_slot<Out>(kWarpItems)) * sizeof(Out);
    static constexpr size_t kWarpBytes = ((kInBytes > kOutBytes ? kInBytes : kOutBytes) + 15) / 16 * 16;
    struct Storage {
        alignas(16) unsigned char warp[kThreads / kWarp][kWarpBytes];
    };

    // items[i] := element at tile position threadIdx.x * kItems + i as Acc, or `fill` where there is none.
    template <class Acc>
    __device__ static void load(const In *in, int64_t start, int lo, int hi, Acc fill, Acc (&items)[kItems],
                                Storage &s) {
        const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
        const int seg = warp * kWarpItems;  // tile position of the warp's first element
        In *buf = reinterpret_cast<In *>(s.warp[warp]);
        const bool full = lo == 0 && hi == kTile;
        if (full && aligned16(in + start)) {
            constexpr int kVecs = kItems / kInLanes;
            const Vec16<In> *src = reinterpret_cast<const Vec16<In> *>(in + start + seg);
            Vec16<In> v[kVecs];
#pragma unroll
            for (int j = 0; j < kVecs; ++j) v[j] = src[j * kWarp + lane];  // all loads in flight before any use
#pragma unroll
            for (int j = 0; j < kVecs; ++j)
#pragma unroll
                for (int k = 0; k < kInLanes; ++k) buf[padded_slot<In>((j * kWarp + lane) * kInLanes + k)] = v[j].lane[k];
        } else {
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                const int p = j * kWarp + lane;
                if (seg + p >= lo && seg + p < hi) buf[padded_slot<In>(p)] = in[start + seg + p];
            }
        }
        __syncwarp();
#pragma unroll
        for (int i = 0; i < kItems; ++i) {
            const int p = lane * kItems + i;
            items[i] = (full || (seg + p >= lo && seg + p < hi)) ? static_cast<Acc>(buf[padded_slot<In>(p)]) : fill;
        }
        __syncwarp();  // the buffer is free again (store reuses it)
    }

    // Writes items (blocked) to the existing positions of the tile.
    template <class Acc>
    __device__ static void store(Out *out, int64_t start, int lo, int hi, const Acc (&items)[kItems], Storage &s) {
        const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
        const int seg = warp * kWarpItems;
        Out *buf = reinterpret_cast<Out *>(s.warp[warp]);
#pragma unroll
        for (int i = 0; i < kItems; ++i) buf[padded_slot<Out>(lane * kItems + i)] = static_cast<Out>(items[i]);
        __syncwarp();
        if (lo == 0 && hi == kTile && aligned16(out + start)) {
            constexpr int kVecs = kItems / kOutLanes;
            Vec16<Out> *dst = reinterpret_cast<Vec16<Out> *>(out + start + seg);
#pragma unroll
            for (int j = 0; j < kVecs; ++j) {
                Vec16<Out> v;
#pragma unroll
                for (int k = 0; k < kOutLanes; ++k) v.lane[k] = buf[padded_slot<Out>((j * kWarp + lane) * kOutLanes + k)];
                dst[j * kWarp + lane] = v;
            }
        } else {
#pragma unroll
            for (int j = 0; j < kItems; ++j) {
                const int p = j * kWarp + lane;
                if (seg + p >= lo && seg + p < hi) out[start + seg + p] = buf[padded_slot<Out>(p)];
            }
        }
        __syncwarp();
    }
};

// Items per thread of the coarsened tiles: 64 bytes of the wider of In and Out, i.e. 16 floats or 8 doubles /
// int64 (int32 -> int64 sums too): four 16-byte loads in flight per thread, 16 or 8 serial steps.
template <class In, class Out>
constexpr int coarsened_items() {
    return 64 / int(sizeof(In) > sizeof(Out) ? sizeof(In) : sizeof(Out));
}

// Elements of `in` before the first 16-byte boundary is reached, counted backwards: the shift that makes every
// tile but the first start on a 16-byte boundary when tile t covers [t*kTile - shift, (t+1)*kTile - shift).
template <class In>
inline int64_t tile_shift(const In *in) {
    return int64_t(reinterpret_cast<uintptr_t>(in) % 16) / int64_t(sizeof(In));
}
// The largest shift any pointer can need: the workspace is planned for it.
template <class In>
constexpr int64_t kMaxTileShift = 16 / int64_t(sizeof(In)) - 1;

}  // namespace gr
