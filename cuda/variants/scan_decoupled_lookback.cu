// scan_decoupled_lookback.cu -- variants `decoupled_lookback` and `ordered_lookback`: the single-pass scan
// (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVIDIA 2016; what seed 001's
// hierarchical scan becomes when its three phases are fused into one), and its run-to-run deterministic form.
//
// reduce_then_scan still reads the input twice, because a tile's prefix is only known after every tile before
// it has been reduced.  Here each tile learns its prefix while it runs (the tile kernel: lookback_tiles.cuh):
//   * a tile publishes its total immediately with status AGGREGATE;
//   * warp 0 then looks back: 32 lanes read the status of the 32 preceding tiles at once, wait until none is
//     EMPTY, and fold the values up to the nearest PREFIX (a tile that knows its inclusive prefix); with none in
//     the window they fold all 32 AGGREGATEs and move 32 tiles further back;
//   * the tile publishes its inclusive prefix with status PREFIX.
//
// Not deterministic for floating sum/prod: which predecessors had already published PREFIX when a tile looked
// back depends on timing, so the prefix is grouped differently from run to run (exact for integers, min, max).
//
// `ordered_lookback` fixes that without a second pass, by giving every prefix one definition that does not
// depend on which predecessor a tile happens to find.  Tiles are grouped in windows of 32 (window w holds tiles
// 32w .. 32w+31):
//   * the window sum S(w) is a warp scan (fixed shape) over its 32 tile aggregates, lane i holding tile 32w+i;
//   * the window prefix is the left fold of the window sums in window order: P(1) = S(0), P(w+1) = P(w) + S(w);
//   * tile 32w+j's exclusive prefix is P(w) + (the same warp scan's lane j-1), without P(0) in window 0.
// Each tile reads the aggregates of the tiles before it in its window (32 lanes at once: they started just
// before it), scans them in one warp scan, and looks back over window statuses for P(w): from the nearest window
// that published its inclusive prefix (PREFIX, value P(u+1)) it folds the sums of the windows after it one
// after another (SUM, value S(u)), in window order, so the value is bitwise P(w) whichever PREFIX it found.
// The last tile of a window publishes S(w), then P(w+1).  The serial part is one operation per window of 32
// tiles a tile lags behind: a tile-by-tile fold (the first form of this variant) made it the critical path of
// the whole scan, 1.8x (float32) to 2.4x (float64) slower than decoupled_lookback at 2^28 on the H200.
#include "variants/lookback_tiles.cuh"

namespace gr {
namespace {

// The left fold, in tile order, of the values of lanes `from` down to 0 (lane 31 holds the earliest tile),
// starting from `acc`: the same in every lane.
template <class Op, class Acc>
__device__ __forceinline__ Acc fold_in_order(Acc acc, Acc v, int from) {
    for (int l = from; l >= 0; l--) acc = Op()(acc, __shfl_sync(kFullMask, v, l));
    return acc;
}

// ordered_lookback, once the nearest PREFIX is tile `p` (value `acc`) and `p` lies before the window that starts
// at `nearest0` (the tile before ours): the tiles p+1 .. `nearest0` again, 32 at a time, folded in tile order.
template <class Op, class Acc, class Status>
__device__ Acc fold_forward(const Status &status, int64_t p, int64_t last, Acc acc) {
    const unsigned lane = threadIdx.x % kWarp;
    const Acc neutral = scan_neutral<Op, Acc>();
    for (int64_t base = p + 1; base <= last; base += kWarp) {
        // lane i reads tile last_in_window - i, so that lane 31 is the earliest, as in the look-back
        const int64_t count = last - base + 1 < kWarp ? last - base + 1 : kWarp;
        const int64_t tile = base + count - 1 - int64_t(lane);
        unsigned st;
        Acc v;
        status.wait(tile, int64_t(lane) < count, neutral, &st, &v);
        // a PREFIX in the window is the left fold up to its tile: start from the latest one (lowest lane)
        const unsigned done = __ballot_sync(kFullMask, st == kPrefix && int64_t(lane) < count);
        if (done) acc = __shfl_sync(kFullMask, v, __ffs(done) - 1);
        acc = fold_in_order<Op>(acc, v, (done ? __ffs(done) - 1 : int(count)) - 1);
    }
    return acc;
}

// Run by all 32 lanes of warp 0 of tile `tile` > 0 once the tile's aggregate is known: publishes it, looks
// back for the exclusive prefix, publishes the inclusive prefix, and returns the exclusive one (in every lane).
struct DecoupledPrefix {
    static constexpr unsigned kFirstStatus = kPrefix;
    static constexpr int64_t kWindowTiles = 0;
    template <class Op, class Acc, class Status>
    __device__ static Acc exclusive(const Status &status, const Status &, int64_t tile, Acc aggregate) {
        const unsigned lane = threadIdx.x % kWarp;
        const Acc neutral = scan_neutral<Op, Acc>();
        if (lane == 0) status.publish(tile, kAggregate, aggregate);
        Acc prefix = neutral;  // of the tiles after the current window, up to `tile`
        for (int64_t nearest = tile - 1;; nearest -= kWarp) {
            // lane i inspects tile nearest - i: lane 0 the nearest predecessor, lane 31 the farthest
            const int64_t pred = nearest - int64_t(lane);
            unsigned st;
            Acc v;
            status.wait(pred, pred >= 0, neutral, &st, &v);
            const unsigned done = __ballot_sync(kFullMask, st == kPrefix);
            const int stop = done ? __ffs(done) - 1 : kWarp - 1;  // nearest PREFIX: nothing before it is needed
            Acc x = int(lane) <= stop ? v : neutral;
            // Fold lanes 0..31 in tile order: a higher lane is an earlier tile, so it goes on the left.
#pragma unroll
            for (int offset = 1; offset < kWarp; offset <<= 1) x = Op()(__shfl_down_sync(kFullMask, x, offset), x);
            prefix = Op()(__shfl_sync(kFullMask, x, 0), prefix);
            if (done) break;
        }
        if (lane == 0) status.publish(tile, kPrefix, Op()(prefix, aggregate));
        return prefix;
    }
};

// The window prefix P(w), w >= 1, in every lane of warp 0: the left fold of the window sums from the nearest
// window that published its inclusive prefix.  Windows before 0 read as PREFIX (never reached: window 0
// publishes PREFIX directly).
template <class Op, class Acc, class Status>
__device__ Acc window_prefix(const Status &windows, int64_t w) {
    const unsigned lane = threadIdx.x % kWarp;
    const Acc neutral = scan_neutral<Op, Acc>();
    for (int64_t nearest = w - 1;; nearest -= kWarp) {
        const int64_t pred = nearest - int64_t(lane);  // lane i: window nearest - i
        unsigned st;
        Acc v;
        windows.wait(pred, pred >= 0, neutral, &st, &v);
        const unsigned done = __ballot_sync(kFullMask, st == kPrefix && pred >= 0);
        if (!done) continue;  // 32 windows of sums only: keep walking back, the fold goes forward from a PREFIX
        const int stop = __ffs(done) - 1;
        const Acc found = __shfl_sync(kFullMask, v, stop);
        return nearest == w - 1 ? fold_in_order<Op>(found, v, stop - 1)
                                : fold_forward<Op>(windows, nearest - stop, w - 1, found);
    }
}

// ordered_lookback, run by all 32 lanes of warp 0 of tile `tile` > 0: publishes the tile's aggregate, computes
// its exclusive prefix as defined at the top of this file, publishes its window's sum and prefix when it is the
// window's last tile, and returns the exclusive prefix (in every lane).
struct OrderedPrefix {
    static constexpr unsigned kFirstStatus = kAggregate;
    static constexpr int64_t kWindowTiles = kWarp;
    template <class Op, class Acc, class Status>
    __device__ static Acc exclusive(const Status &tiles, const Status &windows, int64_t tile, Acc aggregate) {
        const unsigned lane = threadIdx.x % kWarp;
        const Acc neutral = scan_neutral<Op, Acc>();
        const int64_t w = tile / kWarp;
        const int j = int(tile % kWarp);
        if (lane == 0 && j < kWarp - 1) tiles.publish(tile, kAggregate, aggregate);  // the window's later tiles read it
        // lane i < j: the aggregate of tile 32w + i; lane j: ours; above: neutral (a warp scan's lane never reads
        // the lanes above it, so they cannot change the lanes below)
        unsigned st;
        Acc v;
        tiles.wait(w * kWarp + lane, int(lane) < j, neutral, &st, &v);
        if (int(lane) == j) v = aggregate;
        const Acc inclusive = warp_inclusive_scan<Op>(v, lane);
        const Acc before_in_window = __shfl_sync(kFullMask, inclusive, j > 0 ? j - 1 : 0);
        if (w == 0) {  // P(0) does not exist: the window's own scan is the prefix, and window 0's sum is P(1)
            if (lane == kWarp - 1 && j == kWarp - 1) windows.publish(0, kPrefix, inclusive);
            return before_in_window;
        }
        if (lane == kWarp - 1 && j == kWarp - 1) windows.publish(w, kAggregate, inclusive);  // S(w), lane 31
        const Acc p = window_prefix<Op, Acc>(windows, w);
        if (lane == kWarp - 1 && j == kWarp - 1) windows.publish(w, kPrefix, Op()(p, inclusive));  // P(w + 1)
        return j == 0 ? p : Op()(p, before_in_window);
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(decoupled_lookback, gr::Lookback<gr::DecoupledPrefix>)
GR_SCAN_VARIANT(ordered_lookback, gr::Lookback<gr::OrderedPrefix>)
