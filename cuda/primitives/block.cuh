// block.cuh -- block-level primitives built on the warp layer (layer 2 of 3).
#pragma once
#include "primitives/warp.cuh"

namespace gr {

// Block-wide reduction: each warp reduces with shuffles, warp 0 reduces the per-warp results.
// BLOCK is a multiple of 32 and at most 1024.  Thread 0 gets the result; `scratch` holds BLOCK/32 values.
template <class Op, int BLOCK, class T>
__device__ __forceinline__ T block_reduce_shfl(T v, T *scratch) {
    static_assert(BLOCK % kWarp == 0 && BLOCK <= 1024, "block size must be a multiple of 32, at most 1024");
    constexpr int kWarps = BLOCK / kWarp;
    const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    v = warp_reduce_shfl<Op>(v);
    if constexpr (kWarps == 1) return v;
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < kWarps ? scratch[lane] : Op::template identity<T>();
        v = warp_reduce_shfl<Op>(v);
    }
    return v;
}

}  // namespace gr
