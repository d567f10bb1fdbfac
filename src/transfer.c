/* transfer.c -- copies between host (NumPy) memory and the device, and ordering between two streams.
 *
 * Everything here runs without the GIL and returns the first CUDA error.  The exec's pinned buffer is
 * only ever used by calls that synchronise before they return the exec, so it is idle on entry.
 */
#include "ext.h"

#include <string.h>

size_t
gr_transfer_pinned_bytes(size_t bytes)
{
    return GR_RESULT_BYTES + (bytes <= GR_PINNED_SMALL ? bytes : 0);
}

/* Page-lock `bytes` at `host` for a direct DMA (about 5x pageable bandwidth); 1 if that worked.  A refusal
 * (e.g. the range is already registered by its owner, or overlaps a range that is) is not an error: the
 * caller falls back to a pageable copy. */
static int
try_register(void *host, size_t bytes)
{
    if (cudaHostRegister(host, bytes, cudaHostRegisterDefault) == cudaSuccess) return 1;
    (void)cudaGetLastError(); /* clear it: the next kernel launch check must not see it */
    return 0;
}

cudaError_t
gr_upload_host(gr_exec *ex, void *dst, const void *src, size_t bytes, cudaStream_t stream, int *registered)
{
    *registered = 0;
    if (bytes == 0) return cudaSuccess;
    if (bytes <= GR_PINNED_SMALL) {
        char *pinned = (char *)ex->pinned + GR_RESULT_BYTES;
        memcpy(pinned, src, bytes);
        return cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream);
    }
    *registered = try_register((void *)src, bytes);
    return cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, stream);
}

cudaError_t
gr_upload_release(const void *src, int registered, cudaStream_t stream)
{
    if (!registered) return cudaSuccess;
    /* The copy may still be reading `src` if the caller's work failed before its own synchronisation. */
    cudaError_t err = cudaStreamSynchronize(stream);
    cudaError_t unreg = cudaHostUnregister((void *)src);
    return err != cudaSuccess ? err : unreg;
}

cudaError_t
gr_download_host(gr_exec *ex, void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
    cudaError_t err;
    if (bytes == 0) return cudaStreamSynchronize(stream);
    if (bytes <= GR_PINNED_SMALL) {
        char *pinned = (char *)ex->pinned + GR_RESULT_BYTES;
        err = cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
        if (err == cudaSuccess) memcpy(dst, pinned, bytes);
        return err;
    }
    const int registered = try_register(dst, bytes);
    err = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream);
    /* Synchronise even after a failed enqueue: `dst` must be idle before it is unregistered. */
    cudaError_t sync = cudaStreamSynchronize(stream);
    if (err == cudaSuccess) err = sync;
    if (registered) {
        cudaError_t unreg = cudaHostUnregister(dst);
        if (err == cudaSuccess) err = unreg;
    }
    return err;
}

cudaError_t
gr_stream_wait(gr_exec *ex, cudaStream_t waiter, cudaStream_t producer)
{
    if (waiter == producer) return cudaSuccess;
    /* cudaStreamWaitEvent waits for the event's state at the time of the call, so one event serves any number
     * of hops in sequence. */
    cudaError_t err = cudaEventRecord(ex->hop, producer);
    return err == cudaSuccess ? cudaStreamWaitEvent(waiter, ex->hop, 0) : err;
}
