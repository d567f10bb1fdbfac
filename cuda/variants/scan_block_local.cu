// scan_block_local.cu -- the three classic block scans, each run over any length by the hierarchical driver
// (scan_driver.cuh): scan every tile, scan the tile totals, add them back.  One element per thread (two for
// Brent-Kung), loaded and stored one by one: these variants teach the block step, nothing else.
//
// `kogge_stone` (seed 001 "interleaved reduction trees"; Hillis & Steele 1986): log2(B) steps; at step d every
//   element adds the element 2^d to its left.  Few steps, but O(n log n) additions, most threads busy every
//   step, and a barrier per step.
// `brent_kung` (seed 001 "Blelloch scan"; Blelloch 1990): what Kogge-Stone wastes, Blelloch saves: an up-sweep
//   (a reduction tree built in place) and a down-sweep (prefixes pushed back down) do O(n) operations in
//   2 log2(n) steps.  The tree's strided accesses would hit the same shared-memory bank; one padding element
//   every 128 bytes spreads them (GPU Gems 3, ch. 39).
// `warp_shuffle` (seed 001 scan + seed 003 section 3): the tree moves into registers: each warp scans its 32
//   values with __shfl_up_sync (no shared memory, no barrier), then each warp adds the totals of the warps
//   before it -- one barrier for the whole block instead of one per step.
#include "variants/scan_driver.cuh"
#include "variants/scan_entry.cuh"

namespace gr {
namespace {

template <class In_, class Out_>
struct KoggeStoneBlock {
    using In = In_;
    using Out = Out_;
    using Acc = typename accumulator<Out>::type;
    static constexpr int kThreads = 512, kTile = 512;
    static constexpr bool kVectorTiles = false;
    template <class Op>
    struct Storage {
        Acc buf[2][kThreads];
    };
    template <class Op>
    __device__ static Acc scan_tile(const In *in, Out *out, int64_t start, int lo, int hi, bool exclusive,
                                    Storage<Op> &s) {
        const int tid = threadIdx.x;
        const bool here = tid >= lo && tid < hi;
        const Acc x = here ? static_cast<Acc>(in[start + tid]) : scan_neutral<Op, Acc>();
        int cur;
        const Acc inclusive = block_scan_kogge_stone<Op, kThreads>(x, s.buf, &cur);
        if (here) {
            const Acc before = tid > 0 ? s.buf[cur][tid - 1] : scan_neutral<Op, Acc>();
            out[start + tid] = static_cast<Out>(exclusive ? before : inclusive);
        }
        return s.buf[cur][kThreads - 1];
    }
};

template <class In_, class Out_>
struct BrentKungBlock {
    using In = In_;
    using Out = Out_;
    using Acc = typename accumulator<Out>::type;
    static constexpr int kThreads = 512, kTile = 2 * kThreads;
    static constexpr bool kVectorTiles = false;
    template <class Op>
    struct Storage {
        Acc tree[padded_slot<Acc>(kTile)];
    };
    template <class Op>
    __device__ static Acc scan_tile(const In *in, Out *out, int64_t start, int lo, int hi, bool exclusive,
                                    Storage<Op> &s) {
        // Element p and p + kThreads per thread: both loads coalesced.
        const int a = threadIdx.x, b = threadIdx.x + kThreads;
        const bool has_a = a >= lo && a < hi, has_b = b >= lo && b < hi;
        const Acc xa = has_a ? static_cast<Acc>(in[start + a]) : scan_neutral<Op, Acc>();
        const Acc xb = has_b ? static_cast<Acc>(in[start + b]) : scan_neutral<Op, Acc>();
        s.tree[padded_slot<Acc>(a)] = xa;
        s.tree[padded_slot<Acc>(b)] = xb;
        const Acc total = block_scan_brent_kung<Op, kThreads>(s.tree);  // leaves the exclusive scan in s.tree
        const Acc before_a = s.tree[padded_slot<Acc>(a)], before_b = s.tree[padded_slot<Acc>(b)];
        if (has_a) out[start + a] = static_cast<Out>(exclusive ? before_a : Op()(before_a, xa));
        if (has_b) out[start + b] = static_cast<Out>(exclusive ? before_b : Op()(before_b, xb));
        return total;
    }
};

template <class In_, class Out_>
struct WarpShuffleBlock {
    using In = In_;
    using Out = Out_;
    using Acc = typename accumulator<Out>::type;
    static constexpr int kThreads = 512, kTile = 512;
    static constexpr bool kVectorTiles = false;
    template <class Op>
    struct Storage {
        typename BlockScanShfl<Op, kThreads, Acc>::Storage scan;
    };
    template <class Op>
    __device__ static Acc scan_tile(const In *in, Out *out, int64_t start, int lo, int hi, bool exclusive,
                                    Storage<Op> &s) {
        const int tid = threadIdx.x;
        const bool here = tid >= lo && tid < hi;
        const Acc x = here ? static_cast<Acc>(in[start + tid]) : scan_neutral<Op, Acc>();
        Acc before, total;
        BlockScanShfl<Op, kThreads, Acc>::exclusive_scan(x, before, total, s.scan);
        if (here) out[start + tid] = static_cast<Out>(exclusive ? before : Op()(before, x));
        return total;
    }
};

}  // namespace
}  // namespace gr

GR_SCAN_VARIANT(kogge_stone, gr::HierarchicalScan<gr::KoggeStoneBlock>)
GR_SCAN_VARIANT(brent_kung, gr::HierarchicalScan<gr::BrentKungBlock>)
GR_SCAN_VARIANT(warp_shuffle, gr::HierarchicalScan<gr::WarpShuffleBlock>)
