// reduce_shuffle.cu -- variants built on the warp-shuffle block reduction (block.cuh).
//
// `shuffle` (seed 003 section 3, seed 002 "shuffle"): inside a warp, values move register to register
//   with __shfl_down_sync; shared memory only carries one value per warp.  Two elements per thread on
//   load, one block per tile, run over any n by the multi-pass driver.
// `thread_coarsening` (seed 000 10.7): far fewer threads than elements.  The grid is sized to the device
//   (a few blocks per SM) and each thread first folds many elements serially in a grid-stride loop,
//   keeping the loads coalesced; the costly block-wide step then runs once per block instead of once per
//   256 elements.  The per-block partials are reduced by the same kernel in a second launch.
#include "primitives/block.cuh"
#include "variants/entry.cuh"

namespace gr {
namespace {

template <class In, class Acc, class Op>
__global__ void __launch_bounds__(kBlock) shuffle_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc warp_partials[kBlock / kWarp];
    const int64_t i = int64_t(blockIdx.x) * (2 * kBlock) + threadIdx.x;
    Acc v = Op()(load_or_identity<Op, Acc>(in, i, n), load_or_identity<Op, Acc>(in, i + kBlock, n));
    v = block_reduce_shfl<Op, kBlock>(v, warp_partials);
    if (threadIdx.x == 0) out[blockIdx.x] = v;
}

struct ShuffleTile {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, 2 * kBlock); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        shuffle_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

struct CoarsenedTile {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = 0;
    static constexpr int kMinPerThread = 16;  // below this many elements per thread, use fewer blocks
    static constexpr int kBlocksPerSm = 4;    // 1024 resident threads per SM: enough loads in flight
    static int64_t grid(int64_t n, int sm_count) {
        const int64_t want = ceil_div(n, int64_t(kBlock) * kMinPerThread);
        const int64_t cap = int64_t(sm_count) * kBlocksPerSm;
        return want < cap ? want : cap;
    }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        grid_stride_partials_kernel<kBlock, In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(shuffle, gr::MultiPass<gr::ShuffleTile>)
GR_REDUCE_VARIANT(thread_coarsening, gr::MultiPass<gr::CoarsenedTile>)
