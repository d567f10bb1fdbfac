// warp.cuh -- warp-level primitives (layer 1 of 3: warp -> block -> device).
#pragma once
#include "primitives/ops.cuh"

namespace gr {

constexpr int kWarp = 32;
constexpr unsigned kFullMask = 0xffffffffu;

// Tree reduction in registers with __shfl_down_sync (seed 003 section 3).  Lane 0 ends with the result.
// Every lane of the warp must call it.
template <class Op, class T>
__device__ __forceinline__ T warp_reduce_shfl(T v) {
#pragma unroll
    for (int offset = kWarp / 2; offset > 0; offset >>= 1) v = Op()(v, __shfl_down_sync(kFullMask, v, offset));
    return v;
}

// The same tree through shared memory, for the "unroll the last warp" step (seed 002 baseline+3.1,
// seed 003 v4).  The classic code relies on `volatile` and implicit warp-synchronous execution, which
// independent thread scheduling (Volta and later) no longer guarantees; here every step reads, waits
// for the whole warp with __syncwarp, then writes.  Called by all 32 lanes of warp 0 with s[0..63] valid.
template <class Op, class T>
__device__ __forceinline__ void warp_reduce_smem(T *s, unsigned lane) {
    T v = s[lane];
#pragma unroll
    for (int offset = kWarp; offset > 0; offset >>= 1) {
        v = Op()(v, s[lane + offset]);
        __syncwarp();
        s[lane] = v;
        __syncwarp();
    }
}

}  // namespace gr
