// reduce_global_baseline.cu -- variant `global_baseline` (seed 002, "-1 baseline").
//
// No shared memory at all: each block strides over its tile accumulating one value per thread, stores
// those values in a global-memory scratch row, and halves that row in place with __syncthreads between
// steps (global writes of a block are visible to the block after the barrier).  Every tree step is a
// round trip to DRAM/L2, which is what the shared-memory versions that follow fix.
// (The seed folds the user's input in place; here the input stays untouched.)
#include "variants/entry.cuh"

namespace gr {
namespace {

constexpr int kTile = 2048;  // seed 002: one block handles 2048 elements

template <class In, class Acc, class Op>
__global__ void global_baseline_kernel(const In *in, Acc *out, int64_t n, Acc *scratch) {
    const unsigned tid = threadIdx.x;
    const int64_t base = int64_t(blockIdx.x) * kTile;
    const int64_t end = base + kTile < n ? base + kTile : n;
    Acc v = Op::template identity<Acc>();
    for (int64_t i = base + tid; i < end; i += kBlock) v = Op()(v, static_cast<Acc>(in[i]));
    Acc *row = scratch + int64_t(blockIdx.x) * kBlock;
    row[tid] = v;
    __syncthreads();
    for (unsigned s = kBlock / 2; s > 0; s >>= 1) {
        if (tid < s) row[tid] = Op()(row[tid], row[tid + s]);
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = row[0];
}

struct GlobalBaselineTile {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = kBlock;
    static int64_t grid(int64_t n, int) { return ceil_div(n, kTile); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *scratch) {
        global_baseline_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n, scratch);
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(global_baseline, gr::MultiPass<gr::GlobalBaselineTile>)
