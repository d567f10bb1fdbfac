// scan_driver.cuh -- the device-wide hierarchical scan driver (layer 3 of 3) shared by kogge_stone,
// brent_kung, warp_shuffle and hierarchical, which differ only in how one block scans one tile.
//
// Seed 001 "hierarchical scan for large inputs", generalised to any depth:
//   up:    every block scans its tile (block-local result) and writes the tile's total;
//          the totals are an array like any other: scan it the same way (exclusively, in place), and so on
//          until one tile is left;
//   down:  from the top level down, every tile but the first combines its (now exclusive) prefix into its
//          elements.
// Memory traffic: read + write the data, then read + write it again (plus the small levels): twice what a
// single-pass scan needs -- the cost decoupled look-back removes.
//
// A Block policy is a class template over (In, Out) (a coarsened tile's size depends on the types) providing:
//   In, Out, Acc (= accumulator<Out>), kThreads, kTile (elements per block, a multiple of kAddThreads);
//   kVectorTiles: whether its tiles should start on 16-byte boundaries (TileIO), i.e. use tile_shift(in);
//   template <class Op> struct Storage;   (its __shared__ memory)
//   template <class Op> __device__ static Acc scan_tile(const In *in, Out *out, int64_t start, int lo, int hi,
//                                                      bool exclusive, Storage<Op> &s);
//     tile position p is element start + p and exists for p in [lo, hi); writes the block-local inclusive or
//     exclusive scan (the exclusive one starting from scan_neutral) of the existing positions and returns the
//     tile's total (at least in thread 0).
// Level 0 runs Block<In, Out>, the levels of tile totals Block<Acc, Acc>.
// Deterministic: the tiling depends on n and the pointer's alignment only, never on timing.
#pragma once
#include "variants/driver.cuh"
#include "primitives/scan_block.cuh"

namespace gr {

constexpr int kAddThreads = 256;  // block size of the add-back kernel

template <class Block, class Op>
__global__ void __launch_bounds__(Block::kThreads)
    scan_tiles_kernel(const typename Block::In *in, typename Block::Out *out, int64_t n, int64_t shift, bool exclusive,
                      bool first_is_identity, typename Block::Acc *tile_totals) {
    using Out = typename Block::Out;
    using Acc = typename Block::Acc;
    __shared__ typename Block::template Storage<Op> storage;
    const int64_t start = int64_t(blockIdx.x) * Block::kTile - shift;
    const int lo = start < 0 ? int(-start) : 0;
    const int64_t left = n - start;
    const int hi = left < Block::kTile ? int(left) : Block::kTile;
    const Acc total = Block::template scan_tile<Op>(in, out, start, lo, hi, exclusive, storage);
    if (tile_totals && threadIdx.x == 0) tile_totals[blockIdx.x] = total;
    if (first_is_identity && blockIdx.x == 0) {
        // An exclusive scan starts from the neutral element (-0.0 for a float sum), its first output is the
        // operator's identity (+0.0).  Whichever thread wrote out[0] did so before this barrier.
        __syncthreads();
        if (threadIdx.x == 0) out[0] = static_cast<Out>(Op::template identity<Acc>());
    }
}

// data[i] := op(prefix of i's tile, data[i]) for every tile but the first.  One block per tile; each thread
// loads all of its elements before combining, so a thread has kTile / kAddThreads loads in flight.
template <int kTile, class Op, class T, class Acc>
__global__ void __launch_bounds__(kAddThreads)
    add_tile_prefix_kernel(T *data, int64_t n, int64_t shift, const Acc *tile_prefix) {
    static_assert(kTile % kAddThreads == 0, "whole rows of the add-back block");
    constexpr int kPerThread = kTile / kAddThreads;
    const int64_t tile = int64_t(blockIdx.x) + 1;  // tile 0 has nothing before it
    const Acc prefix = tile_prefix[tile];
    const int64_t first = tile * kTile - shift + threadIdx.x;  // > 0: shift < kTile
    T v[kPerThread];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j)
        if (first + int64_t(j) * kAddThreads < n) v[j] = data[first + int64_t(j) * kAddThreads];
#pragma unroll
    for (int j = 0; j < kPerThread; ++j)
        if (first + int64_t(j) * kAddThreads < n)
            data[first + int64_t(j) * kAddThreads] = static_cast<T>(Op()(prefix, static_cast<Acc>(v[j])));
}

// Sizes of the levels.  Level 0 is the data (count[0] = n elements in tiles[0] tiles); level l >= 1 is the
// array totals[l-1] of level l-1's tile totals (count[l] = tiles[l-1] entries).  The top level, `levels`, is one
// tile.  The workspace and the launches are planned by this one constructor.
template <class Acc>
struct HierarchicalPlan {
    static constexpr int kMaxLevels = 8;  // 256^8 = 2^64: enough for any n with tiles of 256 or more
    int levels = 0;
    bool ok = true;
    int64_t count[kMaxLevels + 1];
    int64_t tiles[kMaxLevels + 1];
    Acc *totals[kMaxLevels];

    // tile0: elements per tile of level 0, tile_up: of the levels above
    HierarchicalPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile0, int64_t tile_up) {
        count[0] = n;
        tiles[0] = ceil_div(n + shift, tile0);
        while (tiles[levels] > 1) {
            if (levels == kMaxLevels) {
                ok = false;
                return;
            }
            totals[levels] = s.take<Acc>(tiles[levels]);
            count[levels + 1] = tiles[levels];
            tiles[levels + 1] = ceil_div(count[levels + 1], tile_up);
            ++levels;
        }
    }
};

template <template <class, class> class Block, class Op, class In, class Out>
cudaError_t hierarchical_run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
    using Acc = typename accumulator<Out>::type;
    using Bottom = Block<In, Out>;  // scans the data
    using Upper = Block<Acc, Acc>;  // scans the tile totals
    const int64_t shift = Bottom::kVectorTiles ? tile_shift(in) : 0;
    Scratch s(c.scratch);
    const HierarchicalPlan<Acc> p(s, n, shift, Bottom::kTile, Upper::kTile);
    if (!p.ok || s.used > c.scratch_bytes) return cudaErrorInvalidValue;
    GR_CUDA_TRY(check_grid(p.tiles[0]));

    // Up: block-local scans, each level writing the tile totals the next one scans (exclusively, in place).
    scan_tiles_kernel<Bottom, Op><<<unsigned(p.tiles[0]), Bottom::kThreads, 0, c.stream>>>(
        in, out, n, shift, exclusive, exclusive, p.levels > 0 ? p.totals[0] : nullptr);
    GR_CUDA_TRY(cudaGetLastError());
    for (int l = 1; l <= p.levels; ++l) {
        scan_tiles_kernel<Upper, Op><<<unsigned(p.tiles[l]), Upper::kThreads, 0, c.stream>>>(
            p.totals[l - 1], p.totals[l - 1], p.count[l], 0, true, false, l < p.levels ? p.totals[l] : nullptr);
        GR_CUDA_TRY(cudaGetLastError());
    }
    // Down: top level first, so that every level's prefixes are complete before they are added below.
    for (int l = p.levels - 1; l >= 0; --l) {
        const unsigned grid = unsigned(p.tiles[l] - 1);
        if (l == 0)
            add_tile_prefix_kernel<Bottom::kTile, Op, Out, Acc><<<grid, kAddThreads, 0, c.stream>>>(out, n, shift,
                                                                                                    p.totals[0]);
        else
            add_tile_prefix_kernel<Upper::kTile, Op, Acc, Acc><<<grid, kAddThreads, 0, c.stream>>>(
                p.totals[l - 1], p.count[l], 0, p.totals[l]);
        GR_CUDA_TRY(cudaGetLastError());
    }
    return cudaSuccess;
}

// Adapts a Block policy to the scan Policy interface (scan_entry.cuh).
template <template <class, class> class Block>
struct HierarchicalScan {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        using Bottom = Block<In, Out>;
        Scratch s(nullptr);  // planned for the worst alignment: at most one tile more than an aligned pointer
        const HierarchicalPlan<Acc> p(s, n, Bottom::kVectorTiles ? kMaxTileShift<In> : 0, Bottom::kTile,
                                      Block<Acc, Acc>::kTile);
        *bytes = s.used;
        return p.ok ? cudaSuccess : cudaErrorInvalidValue;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        return hierarchical_run<Block, Op>(in, out, n, exclusive, c);
    }
};

}  // namespace gr
