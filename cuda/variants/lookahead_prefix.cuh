// lookahead_prefix.cuh -- the Prefix of variant `lookahead` (scan_lookahead.cu): the run-to-run deterministic
// single-pass scan, with the window prefixes carried ahead in window order by the window's last tile.  A header
// because `pipelined` (scan_pipelined.cu) falls back to it where its bulk copies cannot run.
//
// What it fixes in `ordered_lookback` (scan_decoupled_lookback.cu): there a tile waits on its window's earlier
// tiles, then walks back over window statuses to the nearest PREFIX and folds the window sums forward from it:
// two waits on other tiles and a walk whose length depends on timing, for windows of 32 tiles.  With 64-bit
// accumulators that cost 12% over the non-deterministic decoupled look-back at 2^28 on the H200 (1451 vs
// 1298 µs, float64).  Here:
//   * tiles are grouped in windows of 64 (kWindowTiles; window w holds tiles 64w .. 64w+63); lane i of warp 0
//     reads the aggregates of tiles 64w+2i and 64w+2i+1, all loads in flight at once;
//   * tile 64w+j's exclusive prefix within its window is E(j) = the fold of its lane pairs before j, then a warp
//     scan of the lanes (a fixed shape, so E(j) is one function of the data);
//   * the window prefix is P(w) = P(w-1) + S(w-1), S the window's total by the same shape; the last tile of
//     window w-1 publishes P(w) as soon as it has P(w-1), so every other tile waits on one word, never walks;
//   * tile 64w+j's exclusive prefix is P(w) + E(j) (E(j) alone in window 0).
// Every prefix is the same expression of the same values on every run: bitwise deterministic.
//
// The chain of window prefixes is serial, one L2 round trip per window (about 0.5 µs on the H200), so a window
// must span more tiles than the device finishes in that time: 64 tiles of 8192 floats are 2 MiB of input,
// about 0.5 µs of the copy bandwidth.  Windows of 32 tiles made the chain the critical path (1138 µs at 2^28 in
// float32 with the smaller tiles), windows of 128 tiles measured the same as 64 for float32 and 3% slower for
// float64 (a tile reads twice as many aggregates).
#pragma once
#include "variants/lookback_tiles.cuh"

namespace gr {
namespace {

constexpr int kWindowLanes = 2;  // tiles per lane of a window
constexpr int kWindow = kWarp * kWindowLanes;

// Run by the 32 lanes of warp 0 of tile `tile`: publishes the tile's aggregate for its window's later tiles,
// and the window's prefix P(w+1) when the tile is the window's last; returns P(w) + E(j) in every lane.
struct LookaheadPrefix {
    static constexpr unsigned kFirstStatus = kAggregate;
    static constexpr int64_t kWindowTiles = kWindow;
    template <class Op, class Acc, class Status>
    __device__ static Acc exclusive(const Status &tiles, const Status &windows, int64_t tile, Acc aggregate) {
        const int lane = threadIdx.x % kWarp;
        const Acc neutral = scan_neutral<Op, Acc>();
        const int64_t w = tile / kWindow;
        const int j = int(tile % kWindow);
        if (lane == 0 && j < kWindow - 1) tiles.publish(tile, kAggregate, aggregate);  // the last tile's is in S(w)
        // lane i: tiles 64w + 2i, 64w + 2i + 1, of which those before j are needed
        const int first = lane * kWindowLanes;
        const int need = j - first < 0 ? 0 : j - first > kWindowLanes ? kWindowLanes : j - first;
        Acc v[kWindowLanes];
        tiles.template wait_each<kWindowLanes>(w * kWindow + first, need, neutral, v);
        Acc e = neutral;
#pragma unroll
        for (int k = 0; k < kWindowLanes; ++k)
            if (k < need) e = Op()(e, v[k]);
        const Acc before = __shfl_sync(kFullMask, warp_inclusive_scan<Op>(e, unsigned(lane)), kWarp - 1);  // E(j)
        Acc p = neutral;
        if (w > 0) {  // P(w), published by the last tile of window w - 1
            unsigned status;
            windows.wait(w - 1, true, neutral, &status, &p);
        }
        if (j == kWindow - 1) {  // S(w) by the same shape, our own aggregate in the last place; then P(w+1)
            Acc s = neutral;
#pragma unroll
            for (int k = 0; k < kWindowLanes; ++k) s = Op()(s, first + k == j ? aggregate : v[k]);
            s = warp_inclusive_scan<Op>(s, unsigned(lane));
            if (lane == kWarp - 1) windows.publish(w, kPrefix, w > 0 ? Op()(p, s) : s);
        }
        if (w == 0) return before;
        return j == 0 ? p : Op()(p, before);
    }
};

}  // namespace
}  // namespace gr

