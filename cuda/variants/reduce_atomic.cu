// reduce_atomic.cu -- variants that combine partial results with atomics instead of a second pass.
//
// `atomic_block` (seed 000 10.6, "segmented reduction"): every block reduces its tile in shared memory
//   (first add during load + convergent tree), then thread 0 folds the block's value into the result
//   with one atomic.  One launch for the data (plus one to set the result to the identity).
// `atomic_warp` (seed 004): a grid-stride loop leaves a partial in every thread, a shuffle reduction
//   leaves one per warp, and lane 0 of every warp folds it into the result atomically.  The seed's first
//   version had lane 0 add its warp's elements serially and accumulated float16 in float16 (28.0 instead
//   of 524282); here the warp reduces in registers and accumulates in the accumulator type.
// Floating-point sum/prod are not deterministic here: the atomics land in whatever order the blocks run.
// Add uses the hardware atomic; prod and floating min/max use a compare-and-swap loop (atomics.cuh).
#include "primitives/atomics.cuh"
#include "variants/entry.cuh"
#include "primitives/warp.cuh"

namespace gr {
namespace {

template <class In, class Acc, class Op>
__global__ void __launch_bounds__(kBlock) atomic_block_kernel(const In *in, Acc *result, int64_t n) {
    __shared__ Acc sdata[kBlock];
    const unsigned tid = threadIdx.x;
    const int64_t i = int64_t(blockIdx.x) * (2 * kBlock) + tid;
    sdata[tid] = Op()(load_or_identity<Op, Acc>(in, i, n), load_or_identity<Op, Acc>(in, i + kBlock, n));
    __syncthreads();
    for (unsigned s = kBlock / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] = Op()(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    if (tid == 0) atomic_combine<Op>(result, sdata[0]);
}

template <class In, class Acc, class Op>
__global__ void __launch_bounds__(kBlock) atomic_warp_kernel(const In *in, Acc *result, int64_t n) {
    const int64_t stride = int64_t(gridDim.x) * kBlock;
    Acc v = Op::template identity<Acc>();
    for (int64_t i = int64_t(blockIdx.x) * kBlock + threadIdx.x; i < n; i += stride)
        v = Op()(v, static_cast<Acc>(in[i]));
    v = warp_reduce_shfl<Op>(v);
    if (threadIdx.x % kWarp == 0) atomic_combine<Op>(result, v);
}

struct AtomicBlock {
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t, int, size_t *bytes) {
        *bytes = 0;
        return cudaSuccess;
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        const int64_t blocks = ceil_div(n, 2 * kBlock);
        GR_CUDA_TRY(check_grid(blocks));
        store_identity_kernel<Acc, Op><<<1, 1, 0, c.stream>>>(out);
        GR_CUDA_TRY(cudaGetLastError());
        atomic_block_kernel<In, Acc, Op><<<unsigned(blocks), kBlock, 0, c.stream>>>(in, out, n);
        return cudaGetLastError();
    }
};

struct AtomicWarp {
    static constexpr int kBlocksPerSm = 8;  // 2048 threads per SM: a full H100/H200 multiprocessor
    template <class In, class Acc, class Op>
    static cudaError_t workspace(int64_t, int, size_t *bytes) {
        *bytes = 0;
        return cudaSuccess;
    }
    template <class In, class Acc, class Op>
    static cudaError_t run(const In *in, Acc *out, int64_t n, const Ctx &c) {
        const int64_t want = ceil_div(n, kBlock), cap = int64_t(c.sm_count) * kBlocksPerSm;
        const int64_t blocks = want < cap ? want : cap;
        store_identity_kernel<Acc, Op><<<1, 1, 0, c.stream>>>(out);
        GR_CUDA_TRY(cudaGetLastError());
        atomic_warp_kernel<In, Acc, Op><<<unsigned(blocks), kBlock, 0, c.stream>>>(in, out, n);
        return cudaGetLastError();
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(atomic_block, gr::AtomicBlock)
GR_REDUCE_VARIANT(atomic_warp, gr::AtomicWarp)
