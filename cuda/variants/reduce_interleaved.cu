// reduce_interleaved.cu -- the two interleaved-addressing kernels that open the progression.
//
// `interleaved_divergent` (seed 000 10.3, seed 003 v1, Harris kernel 1): at step s the threads with
//   tid % (2s) == 0 combine sdata[tid] and sdata[tid + s].  The active threads are scattered over every
//   warp, so each warp runs both sides of the branch, and `%` is slow.
// `interleaved_bank_conflict` (Harris kernel 2): the same pairs, but thread tid handles index 2*s*tid,
//   so active threads are contiguous and warps retire early; the strided index now makes threads of
//   one warp hit the same shared-memory bank (2-way at s=1, up to 16-way), serialising the accesses.
// Both load one element per thread into shared memory and are run over any n by the multi-pass driver.
#include "variants/entry.cuh"

namespace gr {
namespace {

template <class Op, class Acc, class In>
__device__ __forceinline__ void load_tile(Acc *sdata, const In *in, int64_t n) {
    sdata[threadIdx.x] = load_or_identity<Op, Acc>(in, int64_t(blockIdx.x) * kBlock + threadIdx.x, n);
    __syncthreads();
}

template <class In, class Acc, class Op>
__global__ void interleaved_divergent_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc sdata[kBlock];
    load_tile<Op>(sdata, in, n);
    const unsigned tid = threadIdx.x;
    for (unsigned s = 1; s < kBlock; s *= 2) {
        if (tid % (2 * s) == 0) sdata[tid] = Op()(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

template <class In, class Acc, class Op>
__global__ void interleaved_bank_conflict_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc sdata[kBlock];
    load_tile<Op>(sdata, in, n);
    const unsigned tid = threadIdx.x;
    for (unsigned s = 1; s < kBlock; s *= 2) {
        const unsigned index = 2 * s * tid;
        if (index < kBlock) sdata[index] = Op()(sdata[index], sdata[index + s]);
        __syncthreads();
    }
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct OneElementPerThread {
    static constexpr int kBlock = gr::kBlock;
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, kBlock); }
};

struct DivergentTile : OneElementPerThread {
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        interleaved_divergent_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

struct BankConflictTile : OneElementPerThread {
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        interleaved_bank_conflict_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(interleaved_divergent, gr::MultiPass<gr::DivergentTile>)
GR_REDUCE_VARIANT(interleaved_bank_conflict, gr::MultiPass<gr::BankConflictTile>)
