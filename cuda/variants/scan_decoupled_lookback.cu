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
//
// Memory ordering (CUDA/PTX memory model, cuda::atomic_ref at device scope):
//   * 32-bit accumulators: status and value share one 64-bit word, written and read with single 64-bit relaxed
//     atomics: a reader can never see a flag without its value;
//   * 64-bit accumulators: the same in one 128-bit word, {status, value}, with single 128-bit relaxed
//     ld/st.relaxed.gpu.b128 (a flag with a separate value needed release/acquire fences: 1.8x slower at 2^28);
//   Every access is ld/st.relaxed.gpu (through atomic_ref or the .b128 form), never through the non-coherent L1.
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

// The tile status array, laid out in the workspace by take(); all zero bytes is EMPTY (LookbackPlan::clear).
template <class Acc, bool kPacked = sizeof(Acc) == 4>
struct TileStatus;

template <class Acc>
struct TileStatus<Acc, true> {  // one 64-bit word per tile: status << 32 | value bits
    Word *word;
    static TileStatus take(Scratch &s, int64_t tiles) { return TileStatus{s.take<Word>(tiles)}; }
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

// 128-bit relaxed atomics at device scope (PTX ISA 8.3's scalar .b128 type, sm_70 on): one access moves a
// whole {status, value} word, so a reader never sees a flag without its value.  (CUB's 16-byte status word
// uses a .v2.u64 vector access, which the memory model treats as two 64-bit accesses.)
struct alignas(16) WordPair {
    Word status;
    Word value;
};

__device__ __forceinline__ void store_pair_relaxed(WordPair *p, Word status, Word value) {
    asm volatile("{\n\t.reg .b128 w;\n\tmov.b128 w, {%1, %2};\n\tst.relaxed.gpu.b128 [%0], w;\n\t}"
                 :
                 : "l"(p), "l"(status), "l"(value)
                 : "memory");
}

__device__ __forceinline__ WordPair load_pair_relaxed(const WordPair *p) {
    WordPair w;
    asm volatile("{\n\t.reg .b128 w;\n\tld.relaxed.gpu.b128 w, [%2];\n\tmov.b128 {%0, %1}, w;\n\t}"
                 : "=l"(w.status), "=l"(w.value)
                 : "l"(p)
                 : "memory");
    return w;
}

template <class Acc>
struct TileStatus<Acc, false> {  // one 128-bit word per tile: {status, value bits}
    WordPair *word;
    static TileStatus take(Scratch &s, int64_t tiles) { return TileStatus{s.take<WordPair>(tiles)}; }
    __device__ void publish(int64_t tile, unsigned status, Acc v) const {
        store_pair_relaxed(word + tile, status, bits_of(v));
    }
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        WordPair w{kPrefix, bits_of(fill)};
        do {
            if (exists) w = load_pair_relaxed(word + tile);
        } while (__any_sync(kFullMask, unsigned(w.status) == kEmpty));
        *status = unsigned(w.status);
        *v = value_of<Acc>(w.value);
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
template <class Op, class Acc, class Status>
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
template <class Op, class Acc, class Status>
__device__ Acc ordered_look_back(const Status &tiles, const Status &windows, int64_t tile, Acc aggregate) {
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
                         TileStatus<Acc> windows, unsigned *tile_counter) {
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
                if (threadIdx.x == 0) status.publish(0, kOrdered ? kAggregate : kPrefix, aggregate);
            } else if constexpr (kOrdered) {
                p = ordered_look_back<Op>(status, windows, tile, aggregate);
            } else {
                p = look_back<Op>(status, tile, aggregate);
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

template <bool kOrdered, class Acc>
struct LookbackPlan {
    int64_t tiles;
    int64_t windows;  // ordered_lookback: one status per window of 32 tiles
    char *statuses;   // both status arrays, taken one after the other: one memset clears them
    size_t status_bytes;
    TileStatus<Acc> status;
    TileStatus<Acc> window_status;
    LookbackPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile)
        : tiles(ceil_div(n + shift, tile)),
          windows(kOrdered && tiles > 1 ? ceil_div(tiles, int64_t(kWarp)) : 0),
          statuses(s.base ? s.base + s.used : nullptr),
          status_bytes(s.used),
          status(TileStatus<Acc>::take(s, tiles > 1 ? tiles : 0)),  // one tile publishes nothing
          window_status(TileStatus<Acc>::take(s, windows)) {
        status_bytes = s.used - status_bytes;
    }
    cudaError_t clear(cudaStream_t stream) const {
        return status_bytes ? cudaMemsetAsync(statuses, 0, status_bytes, stream) : cudaSuccess;
    }
};

template <bool kOrdered>
struct Lookback {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        Scratch s(nullptr);
        LookbackPlan<kOrdered, Acc> p(s, n, kMaxTileShift<In>, LookbackTiles<In, Out>::kTile);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        using T = LookbackTiles<In, Out>;
        const int64_t shift = tile_shift(in);
        Scratch s(c.scratch);
        const LookbackPlan<kOrdered, Acc> p(s, n, shift, T::kTile);
        GR_CUDA_TRY(check_grid(p.tiles));
        GR_CUDA_TRY(p.clear(c.stream));
        lookback_scan_kernel<kOrdered, In, Out, Acc, Op><<<unsigned(p.tiles), T::kThreads, 0, c.stream>>>(
            in, out, n, shift, exclusive, p.status, p.window_status, c.flags);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(decoupled_lookback, gr::Lookback<false>)
GR_SCAN_VARIANT(ordered_lookback, gr::Lookback<true>)
