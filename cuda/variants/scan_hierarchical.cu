// scan_hierarchical.cu -- variant `hierarchical` (seed 001 "hierarchical scan for large inputs").
//
// The same three-phase driver as the block-local variants (scan_driver.cuh: scan tiles, scan the tile totals
// recursively, add them back), with the block step a production kernel would use instead of a textbook tree:
//   * thread coarsening: a tile is 256 threads x 16 floats (8 doubles / int64), so the tree part of the scan
//     runs once per 16 elements; the rest is a serial fold and a serial rescan in registers (seed 003's
//     "many elements per thread", applied to scans);
//   * 16-byte vector loads and stores, coalesced, moved into the per-thread ("blocked") order through a
//     padded shared-memory transpose (TileIO); the first tile absorbs a misaligned head so the others are
//     aligned;
//   * the block step across threads is the warp-shuffle scan (BlockScanShfl): one barrier per tile.
// Why it differs from warp_shuffle: far fewer, much bigger tiles (4096 elements instead of 512), so the tile
// totals are 8x fewer and the data moves in vectors.  What it still costs: the data is read and written twice
// (tile scan, then add-back); reduce_then_scan cuts that to two reads and one write.
#include "variants/scan_driver.cuh"
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

template <class In_, class Out_>
struct CoarsenedBlock {
    using In = In_;
    using Out = Out_;
    using Acc = typename accumulator<Out>::type;
    static constexpr int kThreads = 256, kItems = coarsened_items<In, Out>(), kTile = kThreads * kItems;
    static constexpr bool kVectorTiles = true;
    using IO = TileIO<kThreads, kItems, In, Out>;
    template <class Op>
    struct Storage {
        typename IO::Storage io;
        typename BlockScanShfl<Op, kThreads, Acc>::Storage scan;
    };
    template <class Op>
    __device__ static Acc scan_tile(const In *in, Out *out, int64_t start, int lo, int hi, bool exclusive,
                                    Storage<Op> &s) {
        Acc x[kItems];
        IO::load(in, start, lo, hi, scan_neutral<Op, Acc>(), x, s.io);
        Acc before, total;
        BlockScanShfl<Op, kThreads, Acc>::exclusive_scan(thread_fold<Op>(x), before, total, s.scan);
        thread_scan<Op>(x, before, exclusive);
        IO::store(out, start, lo, hi, x, s.io);
        return total;
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(hierarchical, gr::HierarchicalScan<gr::CoarsenedBlock>)
