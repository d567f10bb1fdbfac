// reduce_unrolled.cu -- unrolling the tree: the last warp, then every step.
//
// `unroll_last_warp` (seed 002 baseline+3.1, seed 003 v4, Harris kernel 5): once s <= 32 only one warp
//   is active, so the last six steps need no __syncthreads and no `tid < s` test.  The classic code used
//   a `volatile` pointer and assumed the warp runs in lock step; since Volta (independent thread
//   scheduling) that is a race, so warp_reduce_smem separates each step's read and write by __syncwarp.
// `complete_unroll` (seed 003 v5, Harris kernel 6): the block size becomes a template parameter, so
//   every `if (BLOCK >= ...)` is decided at compile time and the whole loop disappears.  One switch maps
//   the runtime block size to the instantiated ones (the cuda-samples pattern).
// Both start with the first add during load (two elements per thread).
#include "variants/entry.cuh"
#include "primitives/warp.cuh"

namespace gr {
namespace {

template <class Op, class Acc, class In>
__device__ __forceinline__ Acc load_two(const In *in, int64_t n, int block) {
    const int64_t i = int64_t(blockIdx.x) * (2 * block) + threadIdx.x;
    return Op()(load_or_identity<Op, Acc>(in, i, n), load_or_identity<Op, Acc>(in, i + block, n));
}

constexpr int kLastWarpBlock = 256;

template <class In, class Acc, class Op>
__global__ void unroll_last_warp_kernel(const In *in, Acc *out, int64_t n) {
    __shared__ Acc sdata[kLastWarpBlock];
    const unsigned tid = threadIdx.x;
    sdata[tid] = load_two<Op, Acc>(in, n, kLastWarpBlock);
    __syncthreads();
    for (unsigned s = kLastWarpBlock / 2; s > kWarp; s >>= 1) {
        if (tid < s) sdata[tid] = Op()(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    if (tid < kWarp) warp_reduce_smem<Op>(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

template <int BLOCK, class In, class Acc, class Op>
__global__ void __launch_bounds__(BLOCK) complete_unroll_kernel(const In *in, Acc *out, int64_t n) {
    static_assert(BLOCK >= 64 && (BLOCK & (BLOCK - 1)) == 0, "power of two, at least two warps");
    __shared__ Acc sdata[BLOCK];
    const unsigned tid = threadIdx.x;
    sdata[tid] = load_two<Op, Acc>(in, n, BLOCK);
    __syncthreads();
#pragma unroll
    for (int s = BLOCK / 2; s > kWarp; s >>= 1) {  // trip count known at compile time: fully unrolled
        if (tid < s) sdata[tid] = Op()(sdata[tid], sdata[tid + s]);
        __syncthreads();
    }
    if (tid < kWarp) warp_reduce_smem<Op>(sdata, tid);
    if (tid == 0) out[blockIdx.x] = sdata[0];
}

struct LastWarpTile {
    static constexpr int kBlock = kLastWarpBlock;
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, 2 * kBlock); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        unroll_last_warp_kernel<In, Acc, Op><<<grid, kBlock, 0, s>>>(in, out, n);
    }
};

// Block size by input length: small inputs get more, smaller blocks to spread over the SMs.
inline int complete_unroll_block(int64_t n) { return n >= (int64_t(1) << 20) ? 512 : n >= 4096 ? 256 : 128; }

struct CompleteUnrollTile {
    static constexpr int kScratchPerBlock = 0;
    static int64_t grid(int64_t n, int) { return ceil_div(n, 2 * complete_unroll_block(n)); }
    template <class In, class Acc, class Op>
    static void launch(unsigned grid, cudaStream_t s, const In *in, Acc *out, int64_t n, Acc *) {
        switch (complete_unroll_block(n)) {  // runtime size -> template parameter, in one place
        case 512: complete_unroll_kernel<512, In, Acc, Op><<<grid, 512, 0, s>>>(in, out, n); break;
        case 256: complete_unroll_kernel<256, In, Acc, Op><<<grid, 256, 0, s>>>(in, out, n); break;
        default: complete_unroll_kernel<128, In, Acc, Op><<<grid, 128, 0, s>>>(in, out, n); break;
        }
    }
};

}  // namespace
}  // namespace gr

GR_REDUCE_VARIANT(unroll_last_warp, gr::MultiPass<gr::LastWarpTile>)
GR_REDUCE_VARIANT(complete_unroll, gr::MultiPass<gr::CompleteUnrollTile>)
