// reduce_sequential.cu -- sequential (convergent) addressing, and first add during load.
//
// `sequential_addressing` (seed 000 10.4, seed 003 v2, Harris kernel 3): at step s the first s threads
//   combine sdata[tid] and sdata[tid + s].  Active threads are contiguous (whole warps retire) and a warp
//   reads 32 consecutive words: no divergence, no bank conflicts.  But half the threads idle from the
//   first step on.
// `first_add_during_load` (seed 000 10.5, seed 003 v3, Harris kernel 4): each thread loads two elements
//   a block apart and combines them on the way into shared memory, so a block covers twice the data
//   and no thread idles in the first step.
#include "variants/entry.cuh"

namespace gr {
namespace {

// The convergent shared-memory tree both kernels end with.
template <class Op, class Acc>
__device__ __forceinline__ void sequential_tree(Acc *sdata) {
    const unsigned tid = threadIdx.x;
    for (unsigned s = kBlock / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = Op()(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
}

template <class In, class Acc, class Op>
__global__ void sequential_addressing_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc sdata[kBlock];
    sdata[threadIdx.x] = load_or_identity<Op, Acc>(in, int64_t(blockIdx.x) * kBlock + threadIdx.x, n);
    __syncthreads();
    sequential_tree<Op>(sdata);
    if (threadIdx.x == 0) out[blockIdx.x] = sdata[0];
}

template <class In, class Acc, class Op>
__global__ void first_add_during_load_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc sdata[kBlock];
    const int64_t i = int64_t(blockIdx.x) * (2 * kBlock) + threadIdx.x;
    sdata[threadIdx.x] = Op()(load_or_identity<Op, Acc>(in, i, n), load_or_identity<Op, Acc>(in, i + kBlock, n));
    __syncthreads();
    sequential_tree<Op>(sdata);
    if (threadIdx.x == 0) out[blockIdx.x] = sdata[0];
}

struct SequentialTile {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, kBlock); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        sequential_addressing_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

struct FirstAddTile {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, 2 * kBlock); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        first_add_during_load_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(sequential_addressing, gr::MultiPass<gr::SequentialTile>)
GR_REDUCE_VARIANT(first_add_during_load, gr::MultiPass<gr::FirstAddTile>)
