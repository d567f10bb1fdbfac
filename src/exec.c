/* exec.c -- devices, and the cached per-device execution resources (streams, workspace, staging, events,
 * the stream-ordered memory pool).
 *
 * Nothing here allocates per call once warm: a gr_exec is leased for a call and returned to a small
 * per-device pool, and its buffers only ever grow.  All pool bookkeeping runs with the GIL held.
 */
#include "ext.h"

#define GR_POOL_PER_DEVICE 4
#define GR_GROWTH_QUANTUM ((size_t)1 << 20)

static gr_exec *g_pool[GR_MAX_DEVICES][GR_POOL_PER_DEVICE];
static int g_pool_count[GR_MAX_DEVICES];
static int g_leased[GR_MAX_DEVICES]; /* execs out on a call right now */
static cudaStream_t g_stream[GR_MAX_DEVICES]; /* created once, lives until the module is freed */
static int g_sm_count[GR_MAX_DEVICES];
static int g_device_count = -1;

static size_t
round_up(size_t x, size_t q)
{
    return (x + q - 1) / q * q;
}

static unsigned char g_pool_ready[GR_MAX_DEVICES];

/* Keep freed blocks in the device's default pool instead of handing them back to the driver at every
 * synchronisation (the default threshold, 0, does that): results then cost no allocation once warm.  Up to a
 * sixteenth of the device's memory only: beyond that, blocks go back at the next synchronisation, so memory
 * gpureduce no longer uses is there for CuPy's and PyTorch's allocators. */
static int
prepare_pool(PyObject *module, int device)
{
    if (g_pool_ready[device]) return 0;
    cudaMemPool_t pool;
    cudaError_t err = cudaDeviceGetDefaultMemPool(&pool, device);
    if (err == cudaSuccess) {
        size_t free_bytes = 0, total_bytes = 0;
        err = cudaMemGetInfo(&free_bytes, &total_bytes);
        uint64_t threshold = (uint64_t)total_bytes / 16;
        if (err == cudaSuccess) err = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold);
    }
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "configuring the device's memory pool");
        return -1;
    }
    g_pool_ready[device] = 1;
    return 0;
}

int
gr_current_device(PyObject *module)
{
    if (g_device_count <= 0) {
        int count = 0; /* cudaGetDeviceCount leaves it untouched when there is no driver */
        cudaError_t err = cudaGetDeviceCount(&count);
        if (err != cudaSuccess || count == 0) {
            gr_raise_no_device(module, err == cudaSuccess ? cudaErrorNoDevice : err);
            return -1;
        }
        g_device_count = count;
    }
    int device = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "cudaGetDevice");
        return -1;
    }
    if (device < 0 || device >= GR_MAX_DEVICES) {
        PyErr_Format(PyExc_RuntimeError, "device %d is beyond the %d devices gpureduce supports", device,
                     GR_MAX_DEVICES);
        return -1;
    }
    if (g_sm_count[device] == 0) {
        int sms = 0;
        err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "cudaDeviceGetAttribute(MultiProcessorCount)");
            return -1;
        }
        g_sm_count[device] = sms;
        /* here, with the device's first call, not at its first pool allocation: that may come inside a CUDA
         * graph capture (run.c), where cudaMemGetInfo is not allowed */
        if (prepare_pool(module, device) < 0) return -1;
    }
    return device;
}

int
gr_device_sm_count(int device)
{
    return g_sm_count[device];
}

cudaStream_t
gr_device_stream(PyObject *module, int device)
{
    if (!g_stream[device]) {
        /* Blocking (not cudaStreamNonBlocking): it waits for the legacy default stream, where PyTorch and
         * CuPy work by default, so inputs that name no stream are ordered after their producer.  It is
         * never destroyed while the module lives, so result arrays can export it. */
        cudaError_t err = cudaStreamCreate(&g_stream[device]);
        if (err != cudaSuccess) {
            g_stream[device] = NULL;
            gr_raise_cuda(module, err, "creating the device's stream");
            return NULL;
        }
    }
    return g_stream[device];
}

/* ---------------------------------------------------------------- memory and the current device */

int
gr_device_alloc(PyObject *module, int device, size_t bytes, cudaStream_t stream, void **ptr)
{
    *ptr = NULL;
    if (prepare_pool(module, device) < 0) return -1;
    /* At least one byte: an empty array still gets a valid, non-null pointer, which some consumers want. */
    cudaError_t err = cudaMallocAsync(ptr, bytes ? bytes : 1, stream);
    if (err != cudaSuccess) {
        *ptr = NULL;
        char what[128];
        size_t free_bytes = 0, total_bytes = 0;
        (void)cudaMemGetInfo(&free_bytes, &total_bytes);
        (void)cudaGetLastError();
        PyOS_snprintf(what, sizeof(what), "allocating %zu bytes (%.1f GiB) of device memory, %.1f GiB free of %.1f GiB",
                      bytes, bytes / 1073741824.0, free_bytes / 1073741824.0, total_bytes / 1073741824.0);
        gr_raise_cuda(module, err, what);
        return -1;
    }
    return 0;
}

int
gr_enter_device(PyObject *module, int device, int *previous)
{
    *previous = -1;
    int current = 0;
    cudaError_t err = cudaGetDevice(&current);
    if (err == cudaSuccess && current != device) {
        err = cudaSetDevice(device);
        if (err == cudaSuccess) *previous = current;
    }
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "selecting the array's device");
        return -1;
    }
    return 0;
}

void
gr_leave_device(int previous)
{
    /* Going back to a device that was current a moment ago cannot fail short of a dead context, which
     * the next CUDA call reports anyway: clear it here so it is not reported twice. */
    if (previous >= 0 && cudaSetDevice(previous) != cudaSuccess) (void)cudaGetLastError();
}

void
gr_exec_free_ring(gr_exec *ex)
{
    for (int b = 0; b < GR_RING_CHUNKS; b++) {
        if (ex->ring[b]) (void)cudaFreeHost(ex->ring[b]);
        if (ex->ring_done[b]) (void)cudaEventDestroy(ex->ring_done[b]);
        ex->ring[b] = NULL;
        ex->ring_done[b] = NULL;
    }
    (void)cudaGetLastError();
}

static void
exec_destroy(gr_exec *ex)
{
    /* Errors are ignored on purpose: this runs on teardown paths, possibly after a fatal CUDA error. */
    if (ex->stream) (void)cudaStreamSynchronize(ex->stream);
    if (ex->workspace) (void)cudaFree(ex->workspace);
    if (ex->staging) (void)cudaFree(ex->staging);
    if (ex->result) (void)cudaFree(ex->result);
    if (ex->pinned) (void)cudaFreeHost(ex->pinned);
    gr_exec_free_ring(ex);
    if (ex->done) (void)cudaEventDestroy(ex->done);
    if (ex->hop) (void)cudaEventDestroy(ex->hop);
    (void)cudaGetLastError();
    PyMem_Free(ex);
}

gr_exec *
gr_exec_acquire(PyObject *module, int device)
{
    gr_exec *ex;
    cudaError_t err;
    if (g_pool_count[device] > 0) {
        ex = g_pool[device][--g_pool_count[device]];
    }
    else {
        ex = PyMem_Calloc(1, sizeof(*ex));
        if (!ex) return (gr_exec *)PyErr_NoMemory();
        ex->device = device;
        ex->stream = gr_device_stream(module, device);
        if (!ex->stream) {
            PyMem_Free(ex);
            return NULL;
        }
        err = cudaMalloc(&ex->result, GR_RESULT_BYTES);
        if (err == cudaSuccess) err = cudaEventCreateWithFlags(&ex->done, cudaEventDisableTiming);
        if (err == cudaSuccess) err = cudaEventCreateWithFlags(&ex->hop, cudaEventDisableTiming);
        if (err != cudaSuccess) {
            exec_destroy(ex);
            return (gr_exec *)gr_raise_cuda(module, err, "allocating execution resources");
        }
    }
    g_leased[device]++; /* from here on, gr_exec_release hands it back */
    /* a failed call may have left the counters mid-count: zeroed again on the next call's own stream */
    if (ex->dirty && ex->zero_bytes < GR_WORKSPACE_ZEROED_BYTES) ex->zero_bytes = GR_WORKSPACE_ZEROED_BYTES;
    ex->dirty = 0;
    return ex;
}

/* Whether work on `stream` is ordered after work enqueued earlier on `previous` without an event: only when both
 * are one stream.  The per-thread default stream is a different stream in each host thread under one handle, so
 * equal handles prove nothing there. */
static int
same_stream(cudaStream_t previous, cudaStream_t stream)
{
    return previous == stream && stream != cudaStreamPerThread;
}

int
gr_exec_begin(PyObject *module, gr_exec *ex, cudaStream_t stream)
{
    cudaError_t err = cudaSuccess;
    if (ex->last_stream && !same_stream(ex->last_stream, stream)) err = cudaStreamWaitEvent(stream, ex->done, 0);
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "ordering after the previous use of the workspace");
        return -1;
    }
    /* Zeroed on the stream the work runs on, after the buffers' previous use: a memset on the legacy stream is not
     * ordered before a kernel on a non-blocking stream (PyTorch's side streams, CuPy's non_blocking=True). */
    if (ex->zero_bytes && ex->workspace) {
        err = cudaMemsetAsync(ex->workspace, 0, ex->zero_bytes, stream);
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "zeroing the workspace");
            return -1;
        }
    }
    ex->zero_bytes = 0;
    return 0;
}

cudaError_t
gr_exec_end(gr_exec *ex, cudaStream_t stream, int synchronised)
{
    if (synchronised) { /* the buffers are idle: the next call need not wait for anything */
        ex->last_stream = NULL;
        return cudaSuccess;
    }
    ex->last_stream = stream;
    return cudaEventRecord(ex->done, stream);
}

void
gr_exec_release(gr_exec *ex)
{
    if (!ex) return;
    g_leased[ex->device]--;
    if (g_pool_count[ex->device] < GR_POOL_PER_DEVICE) g_pool[ex->device][g_pool_count[ex->device]++] = ex;
    else exec_destroy(ex);
}

int
gr_exec_reserve_workspace(PyObject *module, gr_exec *ex, size_t bytes)
{
    if (bytes <= ex->workspace_bytes && ex->workspace) return 0;
    const size_t want = round_up(bytes > GR_WORKSPACE_ZEROED_BYTES ? bytes : GR_WORKSPACE_ZEROED_BYTES,
                                 GR_GROWTH_QUANTUM);
    if (ex->workspace) (void)cudaFree(ex->workspace); /* synchronises: the old one is idle after it */
    ex->workspace = NULL;
    ex->workspace_bytes = 0;
    cudaError_t err = cudaMalloc(&ex->workspace, want);
    if (err != cudaSuccess) {
        ex->workspace = NULL;
        gr_raise_cuda(module, err, "allocating the workspace");
        return -1;
    }
    ex->workspace_bytes = want;
    /* all of it, once, by gr_exec_begin on the call's stream: the look-back scans read status words before their
     * launch writes them (their tags tell stale words apart, cuda/variants/tile_status.cuh), and no kernel should
     * read memory nothing wrote (compute-sanitizer initcheck) */
    ex->zero_bytes = want;
    return 0;
}

int
gr_exec_reserve_for(PyObject *module, gr_exec *ex, const gr_args *a, const char *context)
{
    size_t bytes = 0;
    int cuda_error = 0;
    gr_status st = gr_workspace_size(a, &bytes, &cuda_error);
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, context);
        return -1;
    }
    return gr_exec_reserve_workspace(module, ex, bytes);
}

int
gr_exec_reserve_staging(PyObject *module, gr_exec *ex, size_t bytes)
{
    if (bytes <= ex->staging_bytes && ex->staging) return 0;
    const size_t want = round_up(bytes ? bytes : 1, GR_GROWTH_QUANTUM);
    if (ex->staging) (void)cudaFree(ex->staging);
    ex->staging = NULL;
    ex->staging_bytes = 0;
    cudaError_t err = cudaMalloc(&ex->staging, want);
    if (err != cudaSuccess) {
        ex->staging = NULL;
        gr_raise_cuda(module, err, "allocating device memory for a host input");
        return -1;
    }
    ex->staging_bytes = want;
    return 0;
}

int
gr_exec_reserve_pinned(PyObject *module, gr_exec *ex, size_t bytes)
{
    if (bytes <= ex->pinned_bytes && ex->pinned) return 0;
    const size_t want = round_up(bytes ? bytes : 1, 64 * 1024);
    if (ex->pinned) (void)cudaFreeHost(ex->pinned);
    ex->pinned = NULL;
    ex->pinned_bytes = 0;
    cudaError_t err = cudaMallocHost(&ex->pinned, want);
    if (err != cudaSuccess) {
        ex->pinned = NULL;
        gr_raise_cuda(module, err, "allocating pinned host memory");
        return -1;
    }
    ex->pinned_bytes = want;
    return 0;
}

int
gr_exec_reserve_transfer(PyObject *module, gr_exec *ex, size_t bytes)
{
    if (gr_exec_reserve_pinned(module, ex, GR_RESULT_BYTES + (bytes <= GR_PINNED_SMALL ? bytes : 0)) < 0) return -1;
    return bytes <= GR_PINNED_SMALL ? 0 : gr_exec_reserve_ring(module, ex);
}

int
gr_exec_reserve_ring(PyObject *module, gr_exec *ex)
{
    if (ex->ring[0]) return 0;
    cudaError_t err = cudaSuccess;
    for (int b = 0; b < GR_RING_CHUNKS && err == cudaSuccess; b++) {
        err = cudaMallocHost(&ex->ring[b], GR_RING_CHUNK_BYTES);
        if (err == cudaSuccess) err = cudaEventCreateWithFlags(&ex->ring_done[b], cudaEventDisableTiming);
    }
    if (err != cudaSuccess) {
        gr_exec_free_ring(ex);
        gr_raise_cuda(module, err, "allocating pinned staging memory for a large host transfer");
        return -1;
    }
    return 0;
}

void
gr_exec_release_all(void)
{
    for (int d = 0; d < GR_MAX_DEVICES; d++) {
        while (g_pool_count[d] > 0) exec_destroy(g_pool[d][--g_pool_count[d]]);
        if (g_stream[d]) (void)cudaStreamDestroy(g_stream[d]);
        g_stream[d] = NULL;
    }
}

/* resource_stats() -> dict: what gpureduce holds on the current device, for leak tests and the curious. */
PyObject *
gr_py_resource_stats(PyObject *module, PyObject *unused)
{
    const int device = gr_current_device(module);
    if (device < 0) return NULL;
    unsigned long long exec_device = 0, pinned = 0;
    for (int i = 0; i < g_pool_count[device]; i++) {
        const gr_exec *ex = g_pool[device][i];
        exec_device += ex->workspace_bytes + ex->staging_bytes + GR_RESULT_BYTES;
        pinned += ex->pinned_bytes + (ex->ring[0] ? GR_RING_CHUNKS * GR_RING_CHUNK_BYTES : 0);
    }
    cudaMemPool_t pool;
    uint64_t used = 0, reserved = 0;
    cudaError_t err = cudaDeviceGetDefaultMemPool(&pool, device);
    if (err == cudaSuccess) err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemCurrent, &used);
    if (err == cudaSuccess) err = cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReservedMemCurrent, &reserved);
    if (err != cudaSuccess) return gr_raise_cuda(module, err, "reading the memory pool's attributes");
    unsigned long long results_in_use = 0, results_idle = 0;
    gr_pinned_results_stats(&results_in_use, &results_idle);
    return Py_BuildValue("{sKsKsKsKsKsKsisisi}", "pool_in_use", (unsigned long long)used, "pool_reserved",
                         (unsigned long long)reserved, "exec_device_bytes", exec_device, "pinned_bytes", pinned,
                         "pinned_results_in_use", results_in_use, "pinned_results_idle", results_idle,
                         "execs", g_pool_count[device], "execs_leased", g_leased[device],
                         "operands_kept", gr_kept_count());
}
