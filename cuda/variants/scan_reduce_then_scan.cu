// scan_reduce_then_scan.cu -- variant `reduce_then_scan` (seed 001 hierarchical scan, reordered).
//
// The hierarchical scan writes its block-local results and then reads and rewrites all of them to add the
// tile prefixes: 2 reads + 2 writes of the data.  Reduce-then-scan reorders the work so the output is written
// once:
//   1. reduce: a grid sized to the device (kBlocksPerSm blocks per SM) gives each block a contiguous chunk of
//      tiles; the block reduces its chunk to one value (reductions are cheap: no output);
//   2. scan the chunk totals: one block, a few hundred values;
//   3. rescan: each block scans its chunk again, tile by tile, seeded with its chunk's prefix and carrying the
//      running total from tile to tile, and writes the final values directly.
// 2 reads + 1 write (the second read is of the same data, too big for L2 at large n).  Still two passes over
// the input: decoupled look-back removes the second by letting each tile obtain its prefix while it runs.
// Tiles are the coarsened 16-byte-vector tiles of `hierarchical` (TileIO); deterministic: the partition
// depends on n, the device's SM count and the pointer's alignment only.
#include "primitives/scan_block.cuh"
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 4;  // 1024 resident threads per SM, each with 64 bytes of loads in flight

template <class In, class Out>
struct Tiles {
    static constexpr int kItems = coarsened_items<In, Out>();
    static constexpr int kTile = kThreads * kItems;
    using IO = TileIO<kThreads, kItems, In, Out>;
};

// The partition: tile t covers elements [t*kTile - shift, (t+1)*kTile - shift); block b owns tiles
// [b*per_block, (b+1)*per_block).  `capacity` partials are reserved: no plan for this n needs more.
template <class Acc>
struct ReduceThenScanPlan {
    int64_t tiles, per_block, blocks;
    Acc *partials;
    ReduceThenScanPlan(Scratch &s, int64_t n, int64_t shift, int64_t tile, int sm_count) {
        tiles = ceil_div(n + shift, tile);
        const int64_t cap = int64_t(sm_count > 0 ? sm_count : 1) * kBlocksPerSm;
        per_block = ceil_div(tiles, cap);
        blocks = ceil_div(tiles, per_block);
        partials = s.take<Acc>(tiles < cap ? tiles : cap);  // blocks <= min(tiles, cap) whatever the shift
    }
};

// Tile t's existing positions.
template <int kTile>
__device__ __forceinline__ void tile_bounds(int64_t t, int64_t n, int64_t shift, int64_t *start, int *lo, int *hi) {
    *start = t * kTile - shift;
    *lo = *start < 0 ? int(-*start) : 0;
    const int64_t left = n - *start;
    *hi = left < kTile ? int(left) : kTile;
}

template <class In, class Out, class Acc, class Op>
__global__ void __launch_bounds__(kThreads)
    reduce_chunks_kernel(const In *in, int64_t n, int64_t shift, int64_t tiles, int64_t per_block, Acc *partials) {
    using T = Tiles<In, Out>;
    using Scan = BlockScanShfl<Op, kThreads, Acc>;  // only its aggregate is used: a reduction that pads with
    __shared__ typename T::IO::Storage io;          // scan_neutral, like everything the scans combine
    __shared__ typename Scan::Storage scan;
    Acc running = scan_neutral<Op, Acc>();  // the same in every thread
    const int64_t first = int64_t(blockIdx.x) * per_block;
    const int64_t last = first + per_block < tiles ? first + per_block : tiles;
    for (int64_t t = first; t < last; ++t) {
        int64_t start;
        int lo, hi;
        tile_bounds<T::kTile>(t, n, shift, &start, &lo, &hi);
        Acc x[T::kItems];
        T::IO::load(in, start, lo, hi, scan_neutral<Op, Acc>(), x, io);
        Acc before, total;
        Scan::exclusive_scan(thread_fold<Op>(x), before, total, scan);
        running = Op()(running, total);
        __syncthreads();  // `scan` is reused by the next tile
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = running;
}

// Exclusive scan of the chunk totals, in place, by one block.
template <class Acc, class Op>
__global__ void __launch_bounds__(kThreads) scan_partials_kernel(Acc *partials, int64_t count) {
    using Scan = BlockScanShfl<Op, kThreads, Acc>;
    __shared__ typename Scan::Storage scan;
    Acc carry = scan_neutral<Op, Acc>();
    for (int64_t base = 0; base < count; base += kThreads) {
        const int64_t i = base + threadIdx.x;
        const Acc x = i < count ? partials[i] : scan_neutral<Op, Acc>();
        Acc before, total;
        Scan::exclusive_scan(x, before, total, scan);
        if (i < count) partials[i] = Op()(carry, before);
        carry = Op()(carry, total);
        __syncthreads();
    }
}

template <class In, class Out, class Acc, class Op>
__global__ void __launch_bounds__(kThreads)
    rescan_chunks_kernel(const In *in, Out *out, int64_t n, int64_t shift, int64_t tiles, int64_t per_block,
                         const Acc *chunk_prefix, bool exclusive) {
    using T = Tiles<In, Out>;
    using Scan = BlockScanShfl<Op, kThreads, Acc>;
    __shared__ typename T::IO::Storage io;
    __shared__ typename Scan::Storage scan;
    Acc running = chunk_prefix ? chunk_prefix[blockIdx.x] : scan_neutral<Op, Acc>();  // the same in every thread
    const int64_t first = int64_t(blockIdx.x) * per_block;
    const int64_t last = first + per_block < tiles ? first + per_block : tiles;
    for (int64_t t = first; t < last; ++t) {
        int64_t start;
        int lo, hi;
        tile_bounds<T::kTile>(t, n, shift, &start, &lo, &hi);
        Acc x[T::kItems];
        T::IO::load(in, start, lo, hi, scan_neutral<Op, Acc>(), x, io);
        Acc before, total;
        Scan::exclusive_scan(thread_fold<Op>(x), before, total, scan);
        thread_scan<Op>(x, Op()(running, before), exclusive);
        // element 0 (tile 0, position `shift`, thread 0): an exclusive scan writes the identity there
        if (exclusive && t == 0 && threadIdx.x == 0) set_item(x, int(shift), Op::template identity<Acc>());
        T::IO::store(out, start, lo, hi, x, io);
        running = Op()(running, total);
        __syncthreads();  // `scan` is reused by the next tile
    }
}

struct ReduceThenScan {
    template <class In, class Out, class Op>
    static cudaError_t workspace(int64_t n, int sm_count, size_t *bytes) {
        using Acc = typename accumulator<Out>::type;
        Scratch s(nullptr);
        ReduceThenScanPlan<Acc> p(s, n, kMaxTileShift<In>, Tiles<In, Out>::kTile, sm_count);
        *bytes = s.used;
        return cudaSuccess;
    }
    template <class In, class Out, class Op>
    static cudaError_t run(const In *in, Out *out, int64_t n, bool exclusive, const Ctx &c) {
        using Acc = typename accumulator<Out>::type;
        const int64_t shift = tile_shift(in);
        Scratch s(c.scratch);
        const ReduceThenScanPlan<Acc> p(s, n, shift, Tiles<In, Out>::kTile, c.sm_count);
        GR_CUDA_TRY(check_grid(p.blocks));
        if (p.blocks > 1) {  // one block needs no prefix: skip the first two passes
            reduce_chunks_kernel<In, Out, Acc, Op>
                <<<unsigned(p.blocks), kThreads, 0, c.stream>>>(in, n, shift, p.tiles, p.per_block, p.partials);
            GR_CUDA_TRY(cudaGetLastError());
            scan_partials_kernel<Acc, Op><<<1, kThreads, 0, c.stream>>>(p.partials, p.blocks);
            GR_CUDA_TRY(cudaGetLastError());
        }
        rescan_chunks_kernel<In, Out, Acc, Op><<<unsigned(p.blocks), kThreads, 0, c.stream>>>(
            in, out, n, shift, p.tiles, p.per_block, p.blocks > 1 ? p.partials : nullptr, exclusive);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(reduce_then_scan, gr::ReduceThenScan)
