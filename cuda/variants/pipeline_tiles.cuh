// pipeline_tiles.cuh -- the warp-specialised, persistent single-pass tile kernel of variant `pipelined`
// (scan_pipelined.cu), Hopper on (sm_90: bulk copies and mbarriers, primitives/bulk_copy.cuh).
//
// What it fixes in the look-back tile kernel (lookback_tiles.cuh): there a block loads its tile, then holds
// its registers and its place on the SM while it waits for its prefix, so the loads in flight drop whenever
// tiles wait; with the waits gone (each tile scanned alone) the same kernel runs at 521 us for 2^28 floats,
// with them at 660.  Here one block per SM runs to the end of the array:
//   * warp 0 (the producer) draws tiles from an atomic counter, in order, and bulk-copies each into a ring of
//     kStages shared-memory stages as soon as one is free, so loads stay in flight whatever the tiles wait for;
//   * 8 warps (the consumers) reduce each tile as it lands (a thread folds its row of kItems elements, a block
//     scan gives every thread the total before its row and the tile's aggregate, which is published at once),
//     and finish it kLag tiles later: the first consumer warp gets the tile's exclusive prefix from the Prefix,
//     every thread scans its row from it into shared memory, and one bulk store writes the tile out.
//     Publishing aggregates kLag tiles before the prefix is needed is what removes most of the waiting;
//   * where the shape asks for one (float64), warp 1 is a prefix warp instead: it gets each tile's prefix ahead,
//     in order, and leaves it in shared memory, so the round trips to other tiles' status words stay off the
//     consumers' path (float64 at 2^28: 1067 us, 1196 with the prefix in the consumers' path);
//   * a row is an odd number of 16-byte chunks, so the 16-byte reads and writes of a quarter warp's rows fall
//     in 8 different bank groups (no bank conflicts, no transpose); a wider result row is an even number, and
//     half the quarter warp stores its chunks in a rotated order;
//   * the result goes back into the tile's stage as far as it fits: all of it when it has the input's size, the
//     first half of it when it is twice as wide (int32 -> int64), the second half into one of two staging buffers.
//     (Whole results in two 40 KiB staging buffers left room for 20 KiB input stages only: 951 us at 2^28.)
// Measured at 2^28 on the H200 (the d610e86 and 7d40fcd sections of git show 0aaebd2:benchmarks/results/
// scans_h200.md): float32 525 us (the look-back kernel 662),
// int64 1057 (1291), float64 1067 (1299), int32 -> int64 809 (1090).  The first and last tile may be partial
// (pointer alignment, the array's end): the consumers read and write their existing elements in global memory one
// by one, and the stage goes unused.
//
// Deadlock-free whatever the residency: a tile waits only on tiles with smaller tickets, each drawn by a block
// that is running and that finishes its tickets in order; a block that never runs draws none.
#pragma once
#include <type_traits>
#include "primitives/bulk_copy.cuh"
#include "variants/lookback_tiles.cuh"

namespace gr {
namespace {

// A pipeline of kStages stages of tiles of kItems elements per consumer thread, each finished kLag tiles after it
// is reduced, for (In, Out).  Its prefix is looked up by the first consumer warp when the tile is finished
// (kPrefixLead < 0), or by a prefix warp of its own once the tile kPrefixLead after it has landed.
template <class In, class Out, int kItems_, int kStages_, int kLag_, int kPrefixLead_ = -1>
struct PipelineShapeOf {
    using Acc = typename accumulator<Out>::type;
    static constexpr bool kWidening = sizeof(Out) > sizeof(In);
    static constexpr bool kPrefixWarp = kPrefixLead_ >= 0;
    static constexpr int kConsumers = 256;
    static constexpr int kFirstConsumer = kPrefixWarp ? 2 * kWarp : kWarp;  // after the producer (and prefix) warp
    static constexpr int kThreads = kFirstConsumer + kConsumers;
    static constexpr int kItems = kItems_, kStages = kStages_, kLag = kLag_, kPrefixLead = kPrefixLead_;
    static constexpr int kTile = kConsumers * kItems;
    static constexpr size_t kRingBytes = size_t(kStages) * kTile * sizeof(In);
    // The result rows that fit in their tile's stage; the others go to one of two staging buffers.
    static constexpr int kInPlaceRows = int(kConsumers * sizeof(In) / sizeof(Out));
    static constexpr size_t kStagingBytes = 2 * size_t(kConsumers - kInPlaceRows) * kItems * sizeof(Out);
    static constexpr size_t kBeforeBytes = size_t(kStages) * kConsumers * sizeof(Acc);
    static constexpr size_t kSharedBytes = kRingBytes + kStagingBytes + kBeforeBytes;
    static_assert(kItems * sizeof(In) % 32 == 16, "a row is an odd number of 16-byte chunks (no bank conflicts)");
    static_assert(kItems * sizeof(Out) % 16 == 0, "a result row is whole 16-byte chunks");
    static_assert(kConsumers * sizeof(In) % sizeof(Out) == 0, "the stage holds whole result rows");
    static_assert(kStages >= kLag + 3, "the lag's stages, the one being stored, and one loading");
    static_assert(kPrefixLead < kStages, "the prefix warp never waits on a stage it holds");
};

// The shape for an (input, result) pair of the flat scans' dtypes, chosen by measurement on the H200 (the most
// shared memory a block may have is 227 KiB):
//                 items/thread stages lag prefix  shared memory    2^28 elements, us (tried: items/stages/lag, us)
//   4 -> 4 bytes       36        6     2  consumer  216 + 6 KiB      525  (28/7/3 562, 44/5/2 530, 52/4/1 543;
//                                                                    prefix warp: 744-780, 44/5/1 649)
//   float64            22        4     1  warp, 0   176 + 8 KiB     1067  (consumer 1196; 14/7/2 1062-1081,
//                                                                    26/4/1 1099, lead 1 1106)
//   int64              22        4     1  consumer  176 + 8 KiB     1057  (prefix warp 1080, lead 0 1164,
//                                                                    14/7/2 1060; 18/5/2 1306, 26/4/1 1220)
//   4 -> 8 bytes       36        4     1  consumer  144 + 72 + 8 KiB 809 (28/5/1 818, 20/6/2 953, prefix warp
//                                                                    lead 1 828-843, lead 0 875-885)
// (4 -> 8 bytes before half the result went back into the stage, with 80 KiB of staging: 20/6/2 951 us, 20/5/2
// 998, 12/12/4 1372.)  Larger tiles win as long as the ring keeps a stage loading ahead of the lag's: the time per
// tile grows much less than its size (4 -> 8 bytes: 3.7 us for 36 items, 2.4 for 20).  The prefix warp paid for
// float64 only; elsewhere it measured slower, for reasons not yet understood (its polling is not it: starting it
// later did not help).
template <class In, class Out>
using PipelineShape = PipelineShapeOf<In, Out, sizeof(In) == 8 ? 22 : 36, sizeof(Out) == 8 ? 4 : 6,
                                      sizeof(Out) == 8 ? 1 : 2,
                                      std::is_floating_point<In>::value && sizeof(In) == 8 ? 0 : -1>;

// Tile `t` covers elements [start, start + kTile), of which positions [lo, hi) exist (see TileIO).
struct TileSpan {
    int64_t start;
    int lo, hi;
    bool full;
};

template <int kTile>
__device__ __forceinline__ TileSpan tile_span(int64_t t, int64_t n, int64_t shift) {
    TileSpan s;
    s.start = t * kTile - shift;
    s.lo = s.start < 0 ? int(-s.start) : 0;
    s.hi = n - s.start < kTile ? int(n - s.start) : kTile;
    s.full = s.lo == 0 && s.hi == kTile;
    return s;
}

template <class Sh, class Prefix, class In, class Out, class Acc, class Op>
__global__ void __launch_bounds__(Sh::kThreads, 1)
    pipelined_scan_kernel(const In *in, Out *out, int64_t n, int64_t shift, bool exclusive, int64_t tiles,
                          TileStatus<Acc> status, TileStatus<Acc> windows, unsigned *tile_counter) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    constexpr int kStages = Sh::kStages, kItems = Sh::kItems, kTile = Sh::kTile, kConsumers = Sh::kConsumers;
    constexpr unsigned kTileBytes = unsigned(kTile * sizeof(In));
    constexpr int kInLanes = Vec16<In>::kLanes, kOutLanes = Vec16<Out>::kLanes;
    extern __shared__ __align__(128) unsigned char shared[];
    In *ring = reinterpret_cast<In *>(shared);
    Out *staging = reinterpret_cast<Out *>(shared + Sh::kRingBytes);
    Acc *before_row = reinterpret_cast<Acc *>(shared + Sh::kRingBytes + Sh::kStagingBytes);  // [stage][consumer]
    __shared__ uint64_t loaded[kStages], prefixed[kStages], freed[kStages];
    __shared__ unsigned ticket[kStages];
    __shared__ Acc tile_prefix[kStages];
    __shared__ Acc warp_total[kConsumers / kWarp];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    // A stage (its slot of the ring, ticket and tile_prefix) is free again once every thread that used it has
    // arrived after its last access (each thread releases its own reads and writes, as the memory model asks):
    // the consumers, lane 0 of the prefix warp, and the thread that issued the bulk store of the result (or of
    // its first part) from the stage, once the store has read it.
    constexpr unsigned kFreeArrivals = kConsumers + (Sh::kPrefixWarp ? 1 : 0) + 1;
    constexpr int kInPlaceRows = Sh::kInPlaceRows, kStagedRows = kConsumers - kInPlaceRows;

    if (threadIdx.x == 0) {
        for (int s = 0; s < kStages; ++s) {
            mbarrier_init(&loaded[s], 1);
            mbarrier_init(&prefixed[s], 1);
            mbarrier_init(&freed[s], kFreeArrivals);
        }
        fence_proxy_async();
    }
    __syncthreads();

    if (warp == 0) {  // the producer: stage i % kStages holds the block's i-th ticket
        for (int i = 0;; ++i) {
            const int s = i % kStages;
            if (i >= kStages) mbarrier_wait(&freed[s], ((i / kStages) - 1) & 1);
            unsigned t = 0;
            if (lane == 0) {
                t = atomicAdd(tile_counter, 1u);
                // every block draws exactly one ticket past the end: the last of them leaves the counter zero
                if (t == unsigned(tiles) + gridDim.x - 1) atomicExch(tile_counter, 0u);
            }
            t = __shfl_sync(kFullMask, t, 0);
            if (t >= tiles) {
                if (lane == 0) {
                    ticket[s] = t;
                    mbarrier_arrive(&loaded[s]);
                }
                return;
            }
            const TileSpan sp = tile_span<kTile>(t, n, shift);
            if (lane == 0) {
                ticket[s] = t;
                if (sp.full) {
                    mbarrier_arrive_expect_bytes(&loaded[s], kTileBytes);
                    bulk_load(ring + s * kTile, in + sp.start, kTileBytes, &loaded[s]);
                } else {
                    mbarrier_arrive(&loaded[s]);  // an edge tile: the consumers read it from global memory
                }
            }
        }
    }

    const Acc neutral = scan_neutral<Op, Acc>();
    if (Sh::kPrefixWarp && warp == 1) {  // the prefix warp: each tile's exclusive prefix, in order, to tile_prefix
        typename Prefix::template Cache<Acc> cache{};  // what the Prefix keeps from tile to tile
        auto ticket_of = [&](int s) {  // lane 0 alone reads the slot: it is the one that releases it
            unsigned t = 0;
            if (lane == 0) t = ticket[s];
            return __shfl_sync(kFullMask, t, 0);
        };
        int landed = 0;  // iterations seen landed
        int end = -1;    // the iteration whose ticket is past the end, once seen
        for (int f = 0;; ++f) {
            const int s = f % kStages;
            if (f >= kStages) mbarrier_wait(&freed[s], ((f / kStages) - 1) & 1);
            // start on tile f once tile f + kPrefixLead has landed (the tiles before it have had time to publish)
            for (; end < 0 && landed <= f + Sh::kPrefixLead; ++landed) {
                mbarrier_wait(&loaded[landed % kStages], (landed / kStages) & 1);
                if (ticket_of(landed % kStages) >= tiles) end = landed;
            }
            if (end >= 0 && f >= end) return;
            const unsigned t = ticket_of(s);
            const Acc p = tiles > 1 ? Prefix::template exclusive<Op>(status, windows, t, cache) : neutral;
            if (lane == 0) {
                tile_prefix[s] = p;
                mbarrier_arrive(&prefixed[s]);
                mbarrier_arrive(&freed[s]);
            }
        }
    }

    // ---- the consumers: thread c owns row c of every tile, positions [c * kItems, (c + 1) * kItems) ----
    const int c = threadIdx.x - Sh::kFirstConsumer, cw = c / kWarp;
    typename Prefix::template Cache<Acc> cache{};  // what the first consumer warp's Prefix keeps (no prefix warp)
    auto read_row = [&](const In *stage, const TileSpan &sp, Acc(&x)[kItems]) {
        const In *row = stage + c * kItems;
        if (sp.full) {
#pragma unroll
            for (int k = 0; k < kItems / kInLanes; ++k) {
                const Vec16<In> v = reinterpret_cast<const Vec16<In> *>(row)[k];
#pragma unroll
                for (int l = 0; l < kInLanes; ++l) x[k * kInLanes + l] = static_cast<Acc>(v.lane[l]);
            }
        } else {  // an edge tile (not 16-byte aligned at its ends) is read from global memory, element by element
#pragma unroll
            for (int i = 0; i < kItems; ++i) {
                const int p = c * kItems + i;
                x[i] = p >= sp.lo && p < sp.hi ? static_cast<Acc>(in[sp.start + p]) : neutral;
            }
        }
    };
    int stored = -1;  // the stage whose bulk store is in flight
    int done = 0;     // tiles finished by this block
    int end = -1;     // the iteration that met the end of the tickets
    for (int i = 0;; ++i) {
        const int s = i % kStages;
        if (end < 0) {  // reduce the tile of iteration i
            mbarrier_wait(&loaded[s], (i / kStages) & 1);
            const unsigned t = ticket[s];
            if (t >= tiles) {
                end = i;
            } else {
                Acc x[kItems];
                read_row(ring + s * kTile, tile_span<kTile>(t, n, shift), x);
                const Acc mine = thread_fold<Op>(x);
                const Acc incl = warp_inclusive_scan<Op>(mine, unsigned(lane));
                Acc warp_before = __shfl_up_sync(kFullMask, incl, 1);
                if (lane == 0) warp_before = neutral;
                if (lane == kWarp - 1) warp_total[cw] = incl;
                named_barrier(1, kConsumers);
                Acc all = warp_total[0], before = neutral;
#pragma unroll
                for (int w = 1; w < kConsumers / kWarp; ++w) {
                    if (w == cw) before = all;
                    all = Op()(all, warp_total[w]);
                }
                before_row[s * kConsumers + c] = Op()(before, warp_before);
                if (c == 0 && tiles > 1) Prefix::template publish<Op>(status, t, all);
            }
        }
        const int f = i - Sh::kLag;  // finish the tile of iteration f
        if (f >= 0 && (end < 0 || f < end)) {
            const int fs = f % kStages;
            const int64_t t = ticket[fs];
            const TileSpan sp = tile_span<kTile>(t, n, shift);
            // The row is read before the prefix is known where that measured faster (2^28: int32 -> int64 953 us,
            // 987 after), after it elsewhere (float32 525 us, 542 before; int64 1057, 1073).
            constexpr bool kReadEarly = Sh::kPrefixWarp || Sh::kWidening;
            Acc x[kItems];
            if (kReadEarly) read_row(ring + fs * kTile, sp, x);
            if (Sh::kPrefixWarp) {
                mbarrier_wait(&prefixed[fs], (f / kStages) & 1);
            } else {
                named_barrier(1, kConsumers);  // warp_total has been read
                if (cw == 0) {
                    const Acc p = tiles > 1 ? Prefix::template exclusive<Op>(status, windows, t, cache) : neutral;
                    if (lane == 0) tile_prefix[fs] = p;
                }
                named_barrier(1, kConsumers);
            }
            if (!kReadEarly) read_row(ring + fs * kTile, sp, x);
            thread_scan<Op>(x, Op()(tile_prefix[fs], before_row[fs * kConsumers + c]), exclusive);
            // element 0 (tile 0, position `shift`): an exclusive scan writes the identity there
            if (exclusive && t == 0 && c == int(shift) / kItems)
                set_item(x, int(shift) % kItems, Op::template identity<Acc>());
            // A wider result overwrites other threads' input rows once they have all been read, and the staging
            // buffer once its store of two tiles ago has read it (thread 0 waits for that before its next barrier):
            // the consumers' prefix lookup has two barriers after the early read; a prefix warp needs one here.
            if (Sh::kWidening && Sh::kPrefixWarp) named_barrier(1, kConsumers);
            Out *const in_place = reinterpret_cast<Out *>(ring + fs * kTile);
            Out *const staged = staging + (done % 2) * (kStagedRows * kItems);
            if (sp.full) {
                Out *row = c < kInPlaceRows ? in_place + c * kItems : staged + (c - kInPlaceRows) * kItems;
                // Rows of 2 (mod 4) 16-byte chunks put a quarter warp's stores in 4 bank groups twice over; its
                // second four threads store their chunks one later (the last first) to use the other 4 (int32 ->
                // int64 at 2^28: 983 -> 953 us with 20 items, 838 -> 819 with 28, 811 -> 809 with 36).
                constexpr int kChunks = kItems / kOutLanes;
                const bool shifted = kChunks % 4 == 2 && (c >> 2) % 2 == 1;
#pragma unroll
                for (int k = 0; k < kChunks; ++k) {
                    const int j = k + 1 == kChunks ? 0 : k + 1;
                    Vec16<Out> v;
#pragma unroll
                    for (int l = 0; l < kOutLanes; ++l)
                        v.lane[l] = static_cast<Out>(shifted ? x[j * kOutLanes + l] : x[k * kOutLanes + l]);
                    reinterpret_cast<Vec16<Out> *>(row)[shifted ? j : k] = v;
                }
                fence_proxy_async();
            } else {
#pragma unroll
                for (int k = 0; k < kItems; ++k) {
                    const int p = c * kItems + k;
                    if (p >= sp.lo && p < sp.hi) out[sp.start + p] = static_cast<Out>(x[k]);
                }
            }
            mbarrier_arrive(&freed[fs]);  // this thread is done with the stage (its bulk store may still read it)
            named_barrier(1, kConsumers);  // the result is in the stage; warp_total is read before the next reduce
            if (c == 0) {
                if (sp.full) {
                    bulk_store(out + sp.start, in_place, kTileBytes);
                    if (kStagedRows > 0)
                        bulk_store(out + sp.start + kInPlaceRows * kItems, staged,
                                   unsigned(kStagedRows * kItems * sizeof(Out)));
                }
                bulk_commit();
                bulk_wait_read<1>();  // the previous tile's stores have read its stage: free it
                if (stored >= 0) mbarrier_arrive(&freed[stored]);
            }
            stored = fs;
            ++done;
        } else if (end >= 0 && f >= end) {
            break;
        } else {
            named_barrier(1, kConsumers);  // warp_total is read before the next tile's reduce writes it
        }
    }
    if (c == 0) bulk_wait_all();
#else
    __trap();  // never launched: Pipelined::run checks the device first
#endif
}

}  // namespace
}  // namespace gr
