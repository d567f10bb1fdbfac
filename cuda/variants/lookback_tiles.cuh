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
// Tile status words (CUDA/PTX memory model, cuda::atomic_ref at device scope):
//   * 32-bit accumulators: status and value share one 64-bit word, written and read with single 64-bit relaxed
//     atomics: a reader can never see a flag without its value;
//   * 64-bit accumulators: the same in one 128-bit word, {status, value}, with single 128-bit relaxed
//     ld/st.relaxed.gpu.b128 (a flag with a separate value needed release/acquire fences: 1.8x slower at 2^28);
//   Every access is ld/st.relaxed.gpu (through atomic_ref or the .b128 form), never through the non-coherent L1.
// The status arrays are reset to EMPTY by cudaMemsetAsync in the same stream before every launch (robust even
// after an aborted call); the tile counter lives in the zeroed workspace flags and the tile that draws the last
// ticket puts it back to zero.
//
// Everything here is in an unnamed namespace on purpose: each variant file gets its own kernels, so two files
// never define the same kernel symbol.
#pragma once
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
    // One look at tile `tile`'s word, without waiting: its status (EMPTY if not yet published) and value.
    __device__ unsigned peek(int64_t tile, Acc *v) const {
        const Word w = DeviceWord(word[tile]).load(cuda::memory_order_relaxed);
        *v = value_of<Acc>(w);
        return unsigned(w >> 32);
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
    // Each lane waits for the first `count` (0..K) of the K tiles from `first` on, all of whose loads are in
    // flight at once, and gets their values (`fill` for the others).
    template <int K>
    __device__ void wait_each(int64_t first, int count, Acc fill, Acc (&v)[K]) const {
        Word w[K];
#pragma unroll
        for (int k = 0; k < K; ++k) w[k] = k < count ? Word(kEmpty) << 32 : Word(kAggregate) << 32 | bits_of(fill);
        for (;;) {
            bool pending = false;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (unsigned(w[k] >> 32) == kEmpty) w[k] = DeviceWord(word[first + k]).load(cuda::memory_order_relaxed);
#pragma unroll
            for (int k = 0; k < K; ++k) pending |= unsigned(w[k] >> 32) == kEmpty;
            if (!__any_sync(kFullMask, pending)) break;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = value_of<Acc>(w[k]);
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
    __device__ unsigned peek(int64_t tile, Acc *v) const {
        const WordPair w = load_pair_relaxed(word + tile);
        *v = value_of<Acc>(w.value);
        return unsigned(w.status);
    }
    __device__ void wait(int64_t tile, bool exists, Acc fill, unsigned *status, Acc *v) const {
        WordPair w{kPrefix, bits_of(fill)};
        do {
            if (exists) w = load_pair_relaxed(word + tile);
        } while (__any_sync(kFullMask, unsigned(w.status) == kEmpty));
        *status = unsigned(w.status);
        *v = value_of<Acc>(w.value);
    }
    template <int K>
    __device__ void wait_each(int64_t first, int count, Acc fill, Acc (&v)[K]) const {
        WordPair w[K];
#pragma unroll
        for (int k = 0; k < K; ++k) w[k] = k < count ? WordPair{kEmpty, 0} : WordPair{kAggregate, bits_of(fill)};
        for (;;) {
            bool pending = false;
#pragma unroll
            for (int k = 0; k < K; ++k)
                if (unsigned(w[k].status) == kEmpty) w[k] = load_pair_relaxed(word + first + k);
#pragma unroll
            for (int k = 0; k < K; ++k) pending |= unsigned(w[k].status) == kEmpty;
            if (!__any_sync(kFullMask, pending)) break;
        }
#pragma unroll
        for (int k = 0; k < K; ++k) v[k] = value_of<Acc>(w[k].value);
    }
};

// 128 bytes of the wider type per thread (32 floats, 16 doubles or int64s): twice the coarsening of the
// multi-pass scans.  A look-back tile holds its registers until its prefix arrives, so fewer, larger tiles wait
// less in all: at 2^28 on the H200 the larger tile cut every look-back variant by 12-18% (float32 ordered
// 866 -> 718 us, int64 decoupled 1549 -> 1297 us; benchmarks/results/scans_h200.md) while 48 floats per thread
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

template <class Prefix, class Acc>
struct LookbackPlan {
    int64_t tiles;
    int64_t windows;  // one status per window of Prefix::kWindowTiles tiles, where the Prefix has windows
    char *statuses;   // both status arrays, taken one after the other: one memset clears them
    size_t status_bytes;
    TileStatus<Acc> status;
    TileStatus<Acc> window_status;
    LookbackPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile)
        : tiles(ceil_div(n + shift, tile)),
          windows(Prefix::kWindowTiles && tiles > 1 ? ceil_div(tiles, Prefix::kWindowTiles) : 0),
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
        LookbackPlan<Prefix, Acc> p(s, n, kMaxTileShift<In>, LookbackTiles<In, Out>::kTile);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        using T = LookbackTiles<In, Out>;
        const int64_t shift = tile_shift(in);
        Scratch s(c.scratch);
        const LookbackPlan<Prefix, Acc> p(s, n, shift, T::kTile);
        GR_CUDA_TRY(check_grid(p.tiles));
        GR_CUDA_TRY(p.clear(c.stream));
        lookback_scan_kernel<Prefix, In, Out, Acc, Op><<<unsigned(p.tiles), T::kThreads, 0, c.stream>>>(
            in, out, n, shift, exclusive, p.status, p.window_status, c.flags);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr
