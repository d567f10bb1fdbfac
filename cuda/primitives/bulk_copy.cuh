// bulk_copy.cuh -- Hopper's bulk-copy engine (the 1-D form of the TMA) and the shared-memory barriers it
// signals, as inline PTX.  sm_90 and newer only: callers compile these under `__CUDA_ARCH__ >= 900`.
//
//   * an mbarrier (shared memory, 8 bytes) completes a phase when its expected arrivals have arrived and the
//     bytes announced with expect_tx have landed; waiters spin on the parity of the phase they need;
//   * a bulk load copies a 16-byte aligned run of global memory into shared memory and counts its bytes on an
//     mbarrier; a bulk store copies shared memory to global memory in a "bulk group" of the issuing thread,
//     whose reads of shared memory are waited for with bulk_wait_read;
//   * shared memory written by ordinary stores must be fenced into the async proxy (fence_proxy_async) before a
//     bulk store reads it.
#pragma once
#include <cstdint>

namespace gr {

__device__ __forceinline__ unsigned smem_address(const void *p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900

__device__ __forceinline__ void mbarrier_init(uint64_t *bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(uint64_t *bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
}

// Arrives and announces `bytes` more to land before the phase completes.
__device__ __forceinline__ void mbarrier_arrive_expect_bytes(uint64_t *bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
                 : "memory");
}

// Returns once the phase of parity `parity` has completed (acquire: its writes are visible).
__device__ __forceinline__ void mbarrier_wait(uint64_t *bar, unsigned parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n"
        "WAIT_%=:\n\t"
        "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra WAIT_%=;\n\t}" ::"r"(smem_address(bar)),
        "r"(parity)
        : "memory");
}

// Makes mbarrier.init visible to the bulk-copy engine.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

__device__ __forceinline__ void bulk_load(void *smem, const void *gmem, unsigned bytes, uint64_t *bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_address(smem)),
                 "l"(gmem), "r"(bytes), "r"(smem_address(bar))
                 : "memory");
}

__device__ __forceinline__ void bulk_store(void *gmem, const void *smem, unsigned bytes) {
    asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(gmem), "r"(smem_address(smem)),
                 "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }

// Waits until at most N of this thread's bulk groups still read shared memory.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until this thread's bulk groups have completed (their writes are done).
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// Barrier `id` (1..15; 0 is __syncthreads) over the first `threads` threads that reach it: a subset of the block.
__device__ __forceinline__ void named_barrier(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

#endif

}  // namespace gr
