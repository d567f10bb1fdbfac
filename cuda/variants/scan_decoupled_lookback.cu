// scan_decoupled_lookback.cu -- variants `decoupled_lookback` and `ordered_lookback`: the single-pass scan
// (Merrill & Garland, "Single-pass Parallel Prefix Scan with Decoupled Look-back", NVIDIA 2016; what seed 001's
// hierarchical scan becomes when its three phases are fused into one), and its run-to-run deterministic form.
//
// reduce_then_scan still reads the input twice, because a tile's prefix is only known after every tile before
// it has been reduced.  Here each tile learns its prefix while it runs:
//   * tiles are handed out in order by an atomic counter (so a tile only ever waits on tiles that are already
//     running: no deadlock whatever order the hardware schedules blocks in);
//   * a tile loads its data once (16-byte vectors, TileIO), scans it in registers and across the block
//     (BlockScanShfl), and publishes its total immediately with status AGGREGATE;
//   * warp 0 then looks back: 32 lanes read the status of the 32 preceding tiles at once, wait until none is
//     EMPTY, and fold the values up to the nearest PREFIX (a tile that knows its inclusive prefix); with none in
//     the window they fold all 32 AGGREGATEs and move 32 tiles further back;
//   * the tile publishes its inclusive prefix with status PREFIX, adds its exclusive prefix to its elements and
//     stores them once.
// One read and one write of the data: the bound is a device-to-device copy.
//
// Not deterministic for floating sum/prod: which predecessors had already published PREFIX when a tile looked
// back depends on timing, so the prefix is grouped differently from run to run (exact for integers, min, max).
//
// `ordered_lookback` fixes that without a second pass.  Every PREFIX a tile publishes is defined as the left
// fold of the tile aggregates in tile order, inclusive(t) = inclusive(t-1) + aggregate(t), and the look-back
// computes exactly that expression: from the nearest PREFIX p it folds the aggregates p+1, ..., t-1 one after
// another, in tile order (31 dependent shuffles at most per window, where decoupled_lookback folds a tree).
// Whichever PREFIX a tile happens to find, the value is bitwise the one the serial chain gives, so the result
// does not depend on timing.  When the nearest PREFIX lies beyond the first window, the tiles between are read
// again nearest-last, a PREFIX met on the way replacing the running value (it is that same left fold).
//
// Memory ordering (CUDA/PTX memory model, cuda::atomic_ref at device scope):
//   * 32-bit accumulators: status and value share one 64-bit word, written and read with single 64-bit relaxed
//     atomics: a reader can never see a flag without its value;
//   * 64-bit accumulators: a status word plus one value array per status (so a PREFIX value never overwrites
//     the AGGREGATE value a reader is fetching); the value is stored relaxed, then the status with release;
//     the reader loads statuses relaxed, issues an acquire fence once none is EMPTY, then loads the values.
//   Every access goes through atomic_ref (ld/st.relaxed.gpu), never through the non-coherent L1.
// The status array is reset to EMPTY by cudaMemsetAsync in the same stream before every launch (robust even
// after an aborted call); the tile counter lives in the zeroed workspace flags and the tile that draws the last
// ticket puts it back to zero.
#include <cuda/atomic>
#include "primitives/scan_block.cuh"
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

enum : unsigned { kEmpty = 0, kAggregate = 1, kPrefix = 2 };

using Word = unsigned long long;
using DeviceWord = cuda::atomic_ref<Word, cuda::thread_scope_device>;
using DeviceFlag = cuda::atomic_ref<unsigned, cuda::thread_scope_device>;

template <class T>
__device__ __forceinline__ Word bits_of(T v) {
    static_assert(sizeof(T) <= sizeof(Word), "32- or 64-bit accumulators");
    if constexpr (sizeof(T) == 4) {
        unsigned b;
        memcpy(&b, &v, 4);
        return b;
    } else {
        Word b;
        memcpy(&b, &v, 8);
        return b;
    }
}

template <class T>
__device__ __forceinline__ T value_of(Word b) {
    T v;
    if constexpr (sizeof(T) == 4) {
        const unsigned lo = unsigned(b);
        memcpy(&v, &lo, 4);
    } else {
        memcpy(&v, &b, 8);
    }
    return v;
}

// The tile status array, laid out in the workspace by take() and reset by clear().
template <class Acc, bool kPacked = sizeof(Acc) == 4>
struct TileStatus;

template <class Acc>
struct TileStatus<Acc, true> {  // one 64-bit word per tile: status << 32 | value bits
    Word *word;
    static TileStatus take(Scratch &s, int64_t tiles) { return TileStatus{s.take<Word>(tiles)}; }
    cudaError_t clear(int64_t tiles, cudaStream_t stream) const {
        return cudaMemsetAsync(word, 0, size_t(tiles) * sizeof(Word), stream);
    }
    __device__ void publish(int64_t tile, unsigned status, Acc v) const {
        DeviceWord(word[tile]).store(Word(status) << 32 | bits_of(v), cuda::memory_order_relaxed);
    }
    // Warp-collective: every lane waits for tile `tile` (when `exists`) to have published, and gets its status
    // and value; lanes without a tile get (PREFIX, fill).
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        Word w = Word(kPrefix) << 32 | bits_of(fill);
        do {
            if (exists) w = DeviceWord(word[tile]).load(cuda::memory_order_relaxed);
        } while (__any_sync(kFullMask, unsigned(w >> 32) == kEmpty));
        *status = unsigned(w >> 32);
        *v = value_of<Acc>(w);
    }
};

template <class Acc>
struct TileStatus<Acc, false> {  // a status word and two value words per tile
    unsigned *status;
    Word *aggregate;
    Word *inclusive;
    static TileStatus take(Scratch &s, int64_t tiles) {
        TileStatus t;
        t.status = s.take<unsigned>(tiles);
        t.aggregate = s.take<Word>(tiles);
        t.inclusive = s.take<Word>(tiles);
        return t;
    }
    cudaError_t clear(int64_t tiles, cudaStream_t stream) const {
        return cudaMemsetAsync(status, 0, size_t(tiles) * sizeof(unsigned), stream);
    }
    __device__ void publish(int64_t tile, unsigned st, Acc v) const {
        DeviceWord((st == kAggregate ? aggregate : inclusive)[tile]).store(bits_of(v), cuda::memory_order_relaxed);
        DeviceFlag(status[tile]).store(st, cuda::memory_order_release);  // the value is visible before the flag
    }
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *st, Acc *v) const {
        unsigned s = kPrefix;
        do {
            if (exists) s = DeviceFlag(status[tile]).load(cuda::memory_order_relaxed);
        } while (__any_sync(kFullMask, s == kEmpty));
        // Pairs with the publisher's release: the value stored before the flag we saw is visible now.
        cuda::atomic_thread_fence(cuda::memory_order_acquire, cuda::thread_scope_device);
        *st = s;
        *v = exists ? value_of<Acc>(DeviceWord((s == kAggregate ? aggregate : inclusive)[tile])
                                        .load(cuda::memory_order_relaxed))
                    : fill;
    }
};

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
// kOrdered: the prefix is the left fold of the tile aggregates in tile order (ordered_lookback).
template <bool kOrdered, class Op, class Acc, class Status>
__device__ Acc look_back(const Status &status, int64_t tile, Acc aggregate) {
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
        if constexpr (kOrdered) {
            if (!done) continue;  // keep walking back to a PREFIX; the fold goes forward from it
            const Acc found = __shfl_sync(kFullMask, v, stop);
            prefix = nearest == tile - 1 ? fold_in_order<Op>(found, v, stop - 1)  // all in this window
                                         : fold_forward<Op>(status, nearest - stop, tile - 1, found);
            break;
        }
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

template <class In, class Out>
struct LookbackTiles {
    static constexpr int kThreads = 256;
    static constexpr int kItems = coarsened_items<In, Out>();  // 16 floats or 8 doubles per thread
    static constexpr int kTile = kThreads * kItems;
    using IO = TileIO<kThreads, kItems, In, Out>;
};

template <bool kOrdered, class In, class Out, class Acc, class Op>
__global__ void __launch_bounds__(LookbackTiles<In, Out>::kThreads)
    lookback_scan_kernel(const In *in, Out *out, int64_t n, int64_t shift, bool exclusive, TileStatus<Acc> status,
                         unsigned *tile_counter) {
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
                if (threadIdx.x == 0) status.publish(0, kPrefix, aggregate);
            } else {
                p = look_back<kOrdered, Op>(status, tile, aggregate);
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

template <class Acc>
struct LookbackPlan {
    int64_t tiles;
    TileStatus<Acc> status;
    LookbackPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile)
        : tiles(ceil_div(n + shift, tile)), status(TileStatus<Acc>::take(s, tiles > 1 ? tiles : 0)) {}
};

template <bool kOrdered>
struct Lookback {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        Scratch s(nullptr);
        LookbackPlan<Acc> p(s, n, kMaxTileShift<In>, LookbackTiles<In, Out>::kTile);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        using T = LookbackTiles<In, Out>;
        const int64_t shift = tile_shift(in);
        Scratch s(c.scratch);
        const LookbackPlan<Acc> p(s, n, shift, T::kTile);
        GR_CUDA_TRY(check_grid(p.tiles));
        if (p.tiles > 1) GR_CUDA_TRY(p.status.clear(p.tiles, c.stream));  // one tile publishes nothing
        lookback_scan_kernel<kOrdered, In, Out, Acc, Op>
            <<<unsigned(p.tiles), T::kThreads, 0, c.stream>>>(in, out, n, shift, exclusive, p.status, c.flags);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(decoupled_lookback, gr::Lookback<false>)
GR_SCAN_VARIANT(ordered_lookback, gr::Lookback<true>)
