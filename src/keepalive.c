/* keepalive.c -- operands that enqueued device work may still read, kept alive until its stream has passed it.
 *
 * An asynchronous call returns while its kernels still read its operands.  A producer whose memory is freed in
 * order on the stream the work ran on (PyTorch's and CuPy's allocators on their current stream, a DeviceArray
 * on its own stream) needs nothing more: a free is then ordered after the kernels.  Any other (a CUDA Array
 * Interface exporter, a DLPack producer that was told the legacy stream, an operand of another stream) could
 * free and reuse that memory at once when the call drops it.  Such a call's plan, which holds its operands, waits
 * here behind an event recorded after its work; every later call first lets go of those whose event has passed,
 * and the oldest is waited for once GR_KEPT_MAX are held, so what is held stays bounded.
 * Everything here runs with the GIL held.
 */
#include "ext.h"

#include <string.h>

#define GR_KEPT_MAX 256

typedef struct {
    PyObject *obj;     /* owned */
    cudaEvent_t event; /* recorded after the work that reads obj */
} kept_item;

static kept_item g_kept[GR_KEPT_MAX]; /* in the order they were kept */
static int g_count;

static void
let_go(int i)
{
    (void)cudaEventDestroy(g_kept[i].event);
    (void)cudaGetLastError();
    PyObject *obj = g_kept[i].obj;
    memmove(&g_kept[i], &g_kept[i + 1], sizeof(kept_item) * (size_t)(g_count - i - 1));
    g_count--;
    Py_DECREF(obj); /* last: a destructor may run Python code, which may call gpureduce again */
}

void
gr_kept_collect(void)
{
    for (int i = 0; i < g_count;) {
        const cudaError_t err = cudaEventQuery(g_kept[i].event);
        if (err == cudaErrorNotReady) {
            (void)cudaGetLastError();
            i++;
            continue;
        }
        /* passed, or the context is broken (then nothing runs any more): either way the memory is not read */
        let_go(i);
    }
}

int
gr_keep_until_done(PyObject *module, PyObject *obj, cudaStream_t stream)
{
    gr_kept_collect();
    if (g_count == GR_KEPT_MAX) { /* the oldest is waited for: bounded memory beats unbounded speed */
        cudaError_t err;
        Py_BEGIN_ALLOW_THREADS
        err = cudaEventSynchronize(g_kept[0].event);
        Py_END_ALLOW_THREADS
        (void)err;
        let_go(0);
    }
    cudaEvent_t event = NULL;
    cudaError_t err = cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
    if (err == cudaSuccess) err = cudaEventRecord(event, stream);
    if (err != cudaSuccess) { /* no event: wait for the work instead, so nothing is freed under it */
        if (event) (void)cudaEventDestroy(event);
        cudaError_t waited;
        Py_BEGIN_ALLOW_THREADS
        waited = cudaStreamSynchronize(stream);
        Py_END_ALLOW_THREADS
        if (waited != cudaSuccess) err = waited;
        gr_raise_cuda(module, err, "keeping the operands alive until the work is done");
        return -1;
    }
    Py_INCREF(obj);
    g_kept[g_count++] = (kept_item){obj, event};
    return 0;
}

int
gr_kept_count(void)
{
    return g_count;
}

void
gr_kept_release_all(void)
{
    while (g_count > 0) {
        (void)cudaEventSynchronize(g_kept[0].event);
        let_go(0);
    }
}
