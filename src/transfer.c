/* transfer.c -- copies between host (NumPy) memory and the device, and ordering between two streams.
 *
 * Everything here runs without the GIL and returns the first CUDA error.  The exec's pinned buffer is
 * only ever used by calls that synchronise before they return the exec, so it is idle on entry.
 */
#include "ext.h"

/* Host memory moves through pinned memory the exec owns, never by page-locking the caller's: locking costs
 * 40 ms per GiB (more than the copy), and two threads locking and unlocking pages of one array break each
 * other's copies (issue 13).  Up to GR_PINNED_SMALL bytes go through the exec's pinned buffer, in pieces;
 * more go through its ring of GR_RING_CHUNKS chunks, the host-side copy of one chunk (several CPU threads,
 * host_copy.c) overlapping the DMA of the others. */

static size_t
chunk_bytes(size_t bytes, size_t chunk)
{
    const size_t left = bytes - chunk * GR_RING_CHUNK_BYTES;
    return left < GR_RING_CHUNK_BYTES ? left : GR_RING_CHUNK_BYTES;
}

cudaError_t
gr_ring_put_rows(gr_exec *ex, int b, void *dev, const void *src, size_t rows, size_t row_bytes, size_t src_pitch,
                 cudaStream_t stream)
{
    cudaError_t err = cudaEventSynchronize(ex->ring_done[b]); /* the DMA that last read the slot is done */
    if (err != cudaSuccess) return err;
    char *slot = ex->ring[b];
    if (src_pitch == row_bytes) gr_host_copy(slot, src, rows * row_bytes);
    else
        for (size_t i = 0; i < rows; i++) /* rows of 1 MiB or more (stream_host.c's strips): each split in parts */
            gr_host_copy(slot + i * row_bytes, (const char *)src + i * src_pitch, row_bytes);
    err = cudaMemcpyAsync(dev, slot, rows * row_bytes, cudaMemcpyHostToDevice, stream);
    return err == cudaSuccess ? cudaEventRecord(ex->ring_done[b], stream) : err;
}

cudaError_t
gr_ring_put(gr_exec *ex, int b, void *dev, const void *src, size_t bytes, cudaStream_t stream)
{
    return gr_ring_put_rows(ex, b, dev, src, 1, bytes, bytes, stream);
}

cudaError_t
gr_ring_fetch(gr_exec *ex, int b, const void *dev, size_t bytes, cudaStream_t stream)
{
    cudaError_t err = cudaMemcpyAsync(ex->ring[b], dev, bytes, cudaMemcpyDeviceToHost, stream);
    return err == cudaSuccess ? cudaEventRecord(ex->ring_done[b], stream) : err;
}

cudaError_t
gr_ring_take_rows(gr_exec *ex, int b, void *dst, size_t rows, size_t row_bytes, size_t dst_pitch)
{
    cudaError_t err = cudaEventSynchronize(ex->ring_done[b]); /* its fetch has landed */
    if (err != cudaSuccess) return err;
    const char *slot = ex->ring[b];
    if (dst_pitch == row_bytes) gr_host_copy(dst, slot, rows * row_bytes);
    else
        for (size_t i = 0; i < rows; i++) /* rows of 1 MiB or more (stream_host.c's strips): each split in parts */
            gr_host_copy((char *)dst + i * dst_pitch, slot + i * row_bytes, row_bytes);
    return cudaSuccess;
}

cudaError_t
gr_ring_take(gr_exec *ex, int b, void *dst, size_t bytes)
{
    return gr_ring_take_rows(ex, b, dst, 1, bytes, bytes);
}

cudaError_t
gr_upload_host(gr_exec *ex, void *dst, const void *src, size_t bytes, cudaStream_t stream)
{
    if (bytes == 0) return cudaSuccess;
    if (bytes <= GR_PINNED_SMALL) { /* in pieces, the copy of each overlapping the DMA of the one before */
        char *pinned = (char *)ex->pinned + GR_RESULT_BYTES;
        const size_t piece = bytes >= 2 * GR_SMALL_PIECE_BYTES ? GR_SMALL_PIECE_BYTES : bytes;
        cudaError_t err = cudaSuccess;
        for (size_t at = 0; at < bytes && err == cudaSuccess; at += piece) {
            const size_t n = bytes - at < piece ? bytes - at : piece;
            gr_host_copy(pinned + at, (const char *)src + at, n);
            err = cudaMemcpyAsync((char *)dst + at, pinned + at, n, cudaMemcpyHostToDevice, stream);
        }
        return err;
    }
    const size_t chunks = (bytes + GR_RING_CHUNK_BYTES - 1) / GR_RING_CHUNK_BYTES;
    cudaError_t err = cudaSuccess;
    for (size_t i = 0; i < chunks && err == cudaSuccess; i++) {
        const size_t at = i * GR_RING_CHUNK_BYTES;
        const int b = (int)(i % GR_RING_CHUNKS);
        err = gr_ring_put(ex, b, (char *)dst + at, (const char *)src + at, chunk_bytes(bytes, i), stream);
    }
    return err;
}

cudaError_t
gr_download_host(gr_exec *ex, void *dst, const void *src, size_t bytes, int dst_pinned, cudaStream_t stream)
{
    cudaError_t err;
    if (bytes == 0) return cudaStreamSynchronize(stream);
    if (dst_pinned || bytes <= GR_PINNED_SMALL) { /* straight into dst, or through the exec's pinned buffer */
        char *pinned = dst_pinned ? dst : (char *)ex->pinned + GR_RESULT_BYTES;
        err = cudaMemcpyAsync(pinned, src, bytes, cudaMemcpyDeviceToHost, stream);
        if (err == cudaSuccess) err = cudaStreamSynchronize(stream);
        if (err == cudaSuccess && !dst_pinned) gr_host_copy(dst, pinned, bytes);
        return err;
    }
    /* Step i enqueues chunk i into ring slot i % GR_RING_CHUNKS, after copying out the chunk that slot held
     * (i - GR_RING_CHUNKS); the last steps only copy out. */
    const size_t chunks = (bytes + GR_RING_CHUNK_BYTES - 1) / GR_RING_CHUNK_BYTES;
    err = cudaSuccess;
    for (size_t i = 0; i < chunks + GR_RING_CHUNKS && err == cudaSuccess; i++) {
        const int b = (int)(i % GR_RING_CHUNKS);
        if (i >= GR_RING_CHUNKS && i - GR_RING_CHUNKS < chunks) {
            const size_t j = i - GR_RING_CHUNKS;
            err = gr_ring_take(ex, b, (char *)dst + j * GR_RING_CHUNK_BYTES, chunk_bytes(bytes, j));
            if (err != cudaSuccess) break;
        }
        if (i < chunks)
            err = gr_ring_fetch(ex, b, (const char *)src + i * GR_RING_CHUNK_BYTES, chunk_bytes(bytes, i), stream);
    }
    /* After a failure, nothing may still be writing into the ring when the exec goes back to the pool. */
    if (err != cudaSuccess) (void)cudaStreamSynchronize(stream);
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
