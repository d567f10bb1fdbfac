// lookback_tiles.cuh -- the single-pass tile kernel the look-back scans share (decoupled_lookback,
// ordered_lookback in scan_decoupled_lookback.cu; lookahead in scan_lookahead.cu); they differ only in how a
// tile learns its exclusive prefix (their Prefix, see Lookback below).
//
//   * tiles are handed out in order by an atomic counter (so a tile only ever waits on tiles that are already
//     running: no deadlock whatever order the hardware schedules blocks in);
//   * a tile loads its data once (16-byte vectors, TileIO), scans it in registers and across the block
//     (BlockScanShfl), and warp 0 gets the tile's exclusive prefix from its Prefix while publishing what the
//     later tiles need;
//   * the tile adds its prefix to its elements and stores them once.
// One read and one write of the data: the bound is a device-to-device copy.
//
// Tile status words: TaggedTileStatus (tile_status.cuh), so no launch clears them first; the arrays are zeroed
// anyway for launches of many tiles, where it pays (LookbackPlan::prepare).  The tile counter lives in the
// zeroed workspace flags and the tile that draws the last ticket puts it back to zero.
//
// Everything here is in an unnamed namespace on purpose: each variant file gets its own kernels, so two files
// never define the same kernel symbol.
#pragma once
#include "primitives/scan_block.cuh"
#include "variants/scan_entry.cuh"
#include "variants/tile_status.cuh"

namespace gr {
namespace {

// 128 bytes of the wider type per thread (32 floats, 16 doubles or int64s): twice the coarsening of the
// multi-pass scans.  A look-back tile holds its registers until its prefix arrives, so fewer, larger tiles wait
// less in all: at 2^28 on the H200 the larger tile cut every look-back variant by 12-18% (float32 ordered
// 866 -> 718 us, int64 decoupled 1549 -> 1297 us; measured for commit f8273dd) while 48 floats per thread
// spilled and 128-thread tiles of the same size were slower.
template <class In, class Out>
struct LookbackTiles {
    static constexpr int kThreads = 256;
    static constexpr int kItems = 2 * coarsened_items<In, Out>();
    static constexpr int kTile = kThreads * kItems;
    using IO = TileIO<kThreads, kItems, In, Out>;
};

template <class Prefix, class In, class Out, class Acc, class Op>
__global__ void __launch_bounds__(LookbackTiles<In, Out>::kThreads)
    lookback_scan_kernel(const In *in, Out *out, int64_t n, int64_t shift, bool exclusive,
                         TaggedTileStatus<Acc> status, TaggedTileStatus<Acc> windows, unsigned *tile_counter) {
    using T = LookbackTiles<In, Out>;
    using Scan = BlockScanShfl<Op, T::kThreads, Acc>;
    __shared__ typename T::IO::Storage io;
    __shared__ typename Scan::Storage scan;
    __shared__ unsigned tile_ticket;
    __shared__ Acc tile_prefix;

    if (threadIdx.x == 0) {
        const unsigned t = atomicAdd(tile_counter, 1u);
        if (t == gridDim.x - 1) atomicExch(tile_counter, 0u);  // every ticket is drawn: leave the flags zero
        tile_ticket = t;
        if (gridDim.x > 1) {  // the words this tile will publish, in L2 by the time it does
            status.prefetch(t);
            if constexpr (Prefix::kWindowTiles > 0)
                if (t % Prefix::kWindowTiles == 0) windows.prefetch(t / Prefix::kWindowTiles);
        }
    }
    __syncthreads();
    const int64_t tile = tile_ticket;
    const int64_t start = tile * T::kTile - shift;
    const int lo = start < 0 ? int(-start) : 0;
    const int64_t left = n - start;
    const int hi = left < T::kTile ? int(left) : T::kTile;

    Acc x[T::kItems];
    T::IO::load(in, start, lo, hi, scan_neutral<Op, Acc>(), x, io);
    Acc before, aggregate;
    Scan::exclusive_scan(thread_fold<Op>(x), before, aggregate, scan);

    if (threadIdx.x < kWarp) {
        Acc p = scan_neutral<Op, Acc>();
        if (gridDim.x > 1) {
            if (tile == 0) {
                if (threadIdx.x == 0) status.publish(0, Prefix::kFirstStatus, aggregate);
            } else {
                p = Prefix::template exclusive<Op>(status, windows, tile, aggregate);
            }
        }
        if (threadIdx.x == 0) tile_prefix = p;
    }
    __syncthreads();

    thread_scan<Op>(x, Op()(tile_prefix, before), exclusive);
    // element 0 (tile 0, position `shift`, thread 0): an exclusive scan writes the identity there
    if (exclusive && tile == 0 && threadIdx.x == 0) set_item(x, int(shift), Op::template identity<Acc>());
    T::IO::store(out, start, lo, hi, x, io);
}

// A launch's two status arrays (TileStatus or TaggedTileStatus) in the workspace: one per tile, one per window of
// Prefix::kWindowTiles tiles where the Prefix has windows.
template <class Prefix, class Status>
struct LookbackPlan {
    int64_t tiles;
    int64_t windows;
    char *statuses;  // both status arrays, taken one after the other: one memset clears them
    size_t status_bytes;
    Status status;
    Status window_status;
    LookbackPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile)
        : tiles(ceil_div(n + shift, tile)),
          windows(Prefix::kWindowTiles && tiles > 1 ? ceil_div(tiles, Prefix::kWindowTiles) : 0),
          statuses(s.base ? s.base + s.used : nullptr),
          status_bytes(s.used),
          status(Status::take(s, tiles > 1 ? tiles : 0)),  // one tile publishes nothing
          window_status(Status::take(s, windows)) {
        status_bytes = s.used - status_bytes;
    }
    // Readies the arrays for a launch, in its stream: a TileStatus array must be zeroed.  Tagged words need no
    // clearing, but the memset also brings the arrays into L2, where the publishes and polls find them; its 2.4 us
    // pay from about kWarmFromTiles tiles (float64 ordered_lookback at 2^23, 2048 tiles, was still faster without
    // it; a tagged `pipelined` at 2^28, 29,000 tiles, took 680 us in float32 without it, 525 with).
    cudaError_t prepare(cudaStream_t stream) const {
        const bool zero = !Status::kTagged || tiles > kWarmFromTiles;
        return zero && status_bytes ? cudaMemsetAsync(statuses, 0, status_bytes, stream) : cudaSuccess;
    }
    static constexpr int64_t kWarmFromTiles = 2048;
};
// The Policy of a look-back variant (scan_entry.cuh), from its Prefix:
//   static constexpr unsigned kFirstStatus   what tile 0 publishes with its total (PREFIX, or AGGREGATE where
//                                            windows are folded in order);
//   static constexpr int64_t kWindowTiles    tiles per window status (0: none);
//   template <class Op, class Acc, class Status>
//   __device__ static Acc exclusive(const Status &tiles, const Status &windows, int64_t tile, Acc aggregate)
//       run by the 32 lanes of warp 0 of a tile > 0: publishes what the tile's successors need and returns its
//       exclusive prefix in every lane.
template <class Prefix>
struct Lookback {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        Scratch s(nullptr);
        LookbackPlan<Prefix, TaggedTileStatus<Acc>> p(s, n, kMaxTileShift<In>, LookbackTiles<In, Out>::kTile);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        using T = LookbackTiles<In, Out>;
        const int64_t shift = tile_shift(in);
        Scratch s(c.scratch);
        const LookbackPlan<Prefix, TaggedTileStatus<Acc>> p(s, n, shift, T::kTile);
        GR_CUDA_TRY(check_grid(p.tiles));
        GR_CUDA_TRY(p.prepare(c.stream));
        lookback_scan_kernel<Prefix, In, Out, Acc, Op><<<unsigned(p.tiles), T::kThreads, 0, c.stream>>>(
            in, out, n, shift, exclusive, p.status, p.window_status, c.flags);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr
