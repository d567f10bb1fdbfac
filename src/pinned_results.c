/* pinned_results.c -- NumPy results in pinned host memory, from a pool.
 *
 * A host result that the device writes through pageable memory costs a second host copy (DMA into a pinned
 * chunk, then memcpy into the array) and, for a fresh array, the kernel's page faults; a pinned result takes
 * the DMA directly (issue 13: cumsum of 1 GiB).  Pinning costs about 40 ms per GiB (and ~550 ms per GiB on the
 * GPU machines' VMs: a Dask worker's 32 scans of 512 MiB blocks, results kept, 7.3 s where four workers' 8 each,
 * reused from the idle blocks, took 46 ms a block), so a block is only pinned for a size this process asks for a
 * second time, is kept for reuse when its array dies, and the pool never holds more than
 * GPUREDUCE_PINNED_RESULTS_LIMIT bytes (default: GR_PINNED_DEFAULT_MAX, or a quarter of the host's memory where
 * that is less: results kept alive by the many, a Dask array's blocks, would each pin fresh memory that no call
 * reuses), idle blocks at most GR_PINNED_IDLE_MAX of it.  Beyond that, results are ordinary NumPy arrays.
 */
#include "ext.h"

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define GR_PINNED_RESULT_FROM ((size_t)1 << 20) /* smaller results go through the exec's pinned buffer */
#define GR_PINNED_QUANTUM ((size_t)2 << 20)     /* block sizes: multiples of this */
#define GR_PINNED_IDLE_MAX ((size_t)4 << 30)
#define GR_PINNED_DEFAULT_MAX ((size_t)4 << 30)
#define GR_PINNED_IDLE_BLOCKS 32
#define GR_PINNED_HISTORY 16

typedef struct {
    void *ptr;
    size_t bytes;
} pinned_block;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static pinned_block g_idle[GR_PINNED_IDLE_BLOCKS];
static int g_idle_count;
static size_t g_idle_bytes, g_used_bytes;
static size_t g_asked[GR_PINNED_HISTORY]; /* sizes asked for lately (a ring) */
static int g_asked_next;
static unsigned g_generation; /* bumped in a forked child: blocks of an older generation are the parent's */

static size_t g_limit;
static int g_limit_read;

/* A forked child has none of the parent's threads (one may have held g_lock) and cannot use the parent's CUDA
 * context: it starts with an empty pool; the parent's blocks stay the parent's. */
static void
forget_pool_in_child(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    g_lock = fresh;
    g_idle_count = 0;
    g_idle_bytes = g_used_bytes = 0;
    g_generation++;
}

/* GPUREDUCE_PINNED_RESULTS_LIMIT, read once (settings.c).  0, or -1 with a ValueError. */
static int
read_limit(void)
{
    static int at_fork_registered = 0;
    if (g_limit_read) return 0;
    if (!at_fork_registered) at_fork_registered = pthread_atfork(NULL, NULL, forget_pool_in_child) == 0;
    const int got = gr_env_bytes("GPUREDUCE_PINNED_RESULTS_LIMIT", &g_limit);
    if (got < 0) return -1;
    if (!got) {
        const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        g_limit = pages > 0 && page > 0 ? (size_t)pages * (size_t)page / 4 : 0;
        if (g_limit > GR_PINNED_DEFAULT_MAX) g_limit = GR_PINNED_DEFAULT_MAX;
    }
    g_limit_read = 1;
    return 0;
}

/* Called with g_lock held: whether `bytes` was asked for lately; remembers it either way. */
static int
asked_before(size_t bytes)
{
    for (int i = 0; i < GR_PINNED_HISTORY; i++)
        if (g_asked[i] == bytes) return 1;
    g_asked[g_asked_next] = bytes;
    g_asked_next = (g_asked_next + 1) % GR_PINNED_HISTORY;
    return 0;
}

/* Called with g_lock held: an idle block of at least `bytes` and at most a quarter more, taken out; *size gets
 * its real size (what the pool counts, and what goes back). */
static void *
take_idle(size_t bytes, size_t *size)
{
    int best = -1;
    for (int i = 0; i < g_idle_count; i++)
        if (g_idle[i].bytes >= bytes && g_idle[i].bytes <= bytes + bytes / 4 &&
            (best < 0 || g_idle[i].bytes < g_idle[best].bytes))
            best = i;
    if (best < 0) return NULL;
    void *ptr = g_idle[best].ptr;
    *size = g_idle[best].bytes;
    g_idle_bytes -= g_idle[best].bytes;
    g_used_bytes += g_idle[best].bytes;
    g_idle[best] = g_idle[--g_idle_count];
    return ptr;
}

/* What the capsule that owns a block while its array lives holds. */
typedef struct {
    void *ptr;
    size_t bytes;
    unsigned generation;
} block_note;

static void
give_back(PyObject *capsule)
{
    block_note *note = PyCapsule_GetPointer(capsule, "gpureduce.pinned_result");
    if (!note) {
        PyErr_Clear();
        return;
    }
    void *ptr = note->ptr;
    const size_t bytes = note->bytes;
    const unsigned generation = note->generation;
    PyMem_Free(note);
    pthread_mutex_lock(&g_lock);
    if (generation != g_generation) { /* a parent process's block, in a forked child: not this pool's */
        pthread_mutex_unlock(&g_lock);
        return;
    }
    g_used_bytes -= bytes;
    const int keep = g_idle_count < GR_PINNED_IDLE_BLOCKS && g_idle_bytes + bytes <= GR_PINNED_IDLE_MAX;
    if (keep) {
        g_idle[g_idle_count++] = (pinned_block){ptr, bytes};
        g_idle_bytes += bytes;
    }
    pthread_mutex_unlock(&g_lock);
    if (!keep) {
        (void)cudaFreeHost(ptr);
        (void)cudaGetLastError();
    }
}

/* Room for `bytes` more under the limit, idle blocks freed (oldest first) to make it.  0 if there is none. */
static int
make_room(size_t bytes)
{
    pinned_block drop[GR_PINNED_IDLE_BLOCKS];
    int n_drop = 0, ok;
    pthread_mutex_lock(&g_lock);
    while (g_used_bytes + g_idle_bytes + bytes > g_limit && g_idle_count > 0) {
        drop[n_drop++] = g_idle[0];
        g_idle_bytes -= g_idle[0].bytes;
        memmove(g_idle, g_idle + 1, (size_t)(--g_idle_count) * sizeof(g_idle[0]));
    }
    ok = g_used_bytes + g_idle_bytes + bytes <= g_limit;
    if (ok) g_used_bytes += bytes; /* reserved: the caller allocates it or hands the bytes back */
    pthread_mutex_unlock(&g_lock);
    for (int i = 0; i < n_drop; i++) (void)cudaFreeHost(drop[i].ptr);
    if (n_drop) (void)cudaGetLastError();
    return ok;
}

/* A pinned block of at least `bytes` (*size: its real size), or NULL when the pool declines. */
static void *
pinned_block_for(size_t bytes, size_t *size)
{
    *size = bytes;
    pthread_mutex_lock(&g_lock);
    void *ptr = take_idle(bytes, size);
    const int again = ptr || asked_before(bytes);
    pthread_mutex_unlock(&g_lock);
    if (ptr || !again || !make_room(bytes)) return ptr;
    void *fresh = NULL;
    cudaError_t err;
    Py_BEGIN_ALLOW_THREADS /* pinning a GiB takes tens of milliseconds */
    err = cudaHostAlloc(&fresh, bytes, cudaHostAllocPortable);
    Py_END_ALLOW_THREADS
    if (err == cudaSuccess) return fresh;
    (void)cudaGetLastError(); /* no pinned memory to be had: an ordinary array does */
    pthread_mutex_lock(&g_lock);
    g_used_bytes -= bytes;
    pthread_mutex_unlock(&g_lock);
    return NULL;
}

PyObject *
gr_host_result_new(int ndim, const npy_intp *dims, int typenum, int *pinned)
{
    *pinned = 0;
    if (read_limit() < 0) return NULL;
    PyArray_Descr *descr = PyArray_DescrFromType(typenum);
    if (!descr) return NULL;
    size_t bytes = (size_t)PyDataType_ELSIZE(descr);
    for (int i = 0; i < ndim; i++) bytes *= (size_t)dims[i];
    if (bytes < GR_PINNED_RESULT_FROM) {
        Py_DECREF(descr);
        return PyArray_SimpleNew(ndim, (npy_intp *)dims, typenum);
    }
    const size_t block = (bytes + GR_PINNED_QUANTUM - 1) / GR_PINNED_QUANTUM * GR_PINNED_QUANTUM;
    size_t size;
    void *ptr = pinned_block_for(block, &size);
    if (!ptr) {
        Py_DECREF(descr);
        return PyArray_SimpleNew(ndim, (npy_intp *)dims, typenum);
    }
    block_note *note = PyMem_Malloc(sizeof(*note));
    if (note) *note = (block_note){ptr, size, g_generation};
    PyObject *owner = note ? PyCapsule_New(note, "gpureduce.pinned_result", give_back) : NULL;
    if (!owner) {
        Py_DECREF(descr);
        PyMem_Free(note);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        pthread_mutex_lock(&g_lock);
        g_used_bytes -= size;
        pthread_mutex_unlock(&g_lock);
        (void)cudaFreeHost(ptr); /* failing anyway: its own error would hide the first */
        return NULL;
    }
    /* steals descr */
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, descr, ndim, (npy_intp *)dims, NULL, ptr,
                                           NPY_ARRAY_CARRAY, NULL);
    if (!array || PyArray_SetBaseObject((PyArrayObject *)array, owner) < 0) { /* steals owner, even on failure */
        if (!array) Py_DECREF(owner);
        Py_XDECREF(array);
        return NULL;
    }
    *pinned = 1;
    return array;
}

void
gr_pinned_results_stats(unsigned long long *in_use, unsigned long long *idle)
{
    pthread_mutex_lock(&g_lock);
    *in_use = g_used_bytes;
    *idle = g_idle_bytes;
    pthread_mutex_unlock(&g_lock);
}

void
gr_pinned_results_release_idle(void)
{
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_idle_count; i++) (void)cudaFreeHost(g_idle[i].ptr);
    g_idle_count = 0;
    g_idle_bytes = 0;
    pthread_mutex_unlock(&g_lock);
    (void)cudaGetLastError();
}
