/* timing.c -- device-side timings for the benchmarks: time_device (a plan's kernels), time_ceiling (what bounds
 * them: a read, a device copy, pinned host <-> device copies), time_calls (a peer library's function), and
 * time_stages (the runner's stages on the host clock).
 *
 * CUDA events bracket each call on the stream its work runs on, so nothing Python does between calls falls
 * inside a measured interval; before every call the L2 is flushed by writing a buffer twice its size (cold
 * cache: a 64 MB input must not be timed out of a 60 MB L2, DESIGN.md section 6).  Warm-up calls are made
 * first.  time_device runs a plan through the one runner (run.c) and launches its kernels again for each timed
 * call; time_calls times a Python callable on the legacy default stream, where CuPy and PyTorch work unless told
 * otherwise.
 */
#include "ext.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define GR_MAX_FLUSH_DEVICES 64

static void *g_flush[GR_MAX_FLUSH_DEVICES];
static size_t g_flush_bytes[GR_MAX_FLUSH_DEVICES];

/* A device buffer of twice the L2 size, allocated on first use and kept: benchmarks only. */
static int
flush_buffer(PyObject *module, int device, void **buf, size_t *bytes)
{
    if (device >= GR_MAX_FLUSH_DEVICES) {
        PyErr_SetString(PyExc_RuntimeError, "too many devices for the benchmark's L2 flush buffers");
        return -1;
    }
    if (!g_flush[device]) {
        int l2 = 0;
        cudaError_t err = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
        if (err == cudaSuccess) {
            g_flush_bytes[device] = 2 * (size_t)(l2 > 0 ? l2 : 64 << 20);
            err = cudaMalloc(&g_flush[device], g_flush_bytes[device]);
        }
        if (err != cudaSuccess) {
            g_flush[device] = NULL;
            gr_raise_cuda(module, err, "allocating the L2 flush buffer");
            return -1;
        }
    }
    *buf = g_flush[device];
    *bytes = g_flush_bytes[device];
    return 0;
}

/* The events and the flush buffer of one timing loop. */
typedef struct {
    cudaEvent_t start, stop;
    void *flush; /* NULL: no flush */
    size_t flush_bytes;
} gr_timer;

static int
timer_open(PyObject *module, int device, int flush_l2, gr_timer *t)
{
    memset(t, 0, sizeof(*t));
    if (flush_l2 && flush_buffer(module, device, &t->flush, &t->flush_bytes) < 0) return -1;
    cudaError_t err = cudaEventCreate(&t->start);
    if (err == cudaSuccess) err = cudaEventCreate(&t->stop);
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "creating the timing events");
        return -1;
    }
    return 0;
}

static void
timer_close(gr_timer *t)
{
    if (t->start) (void)cudaEventDestroy(t->start);
    if (t->stop) (void)cudaEventDestroy(t->stop);
}

/* Flush (call i's own byte, so no write is skipped) and start the clock on `stream`; no GIL needed. */
static cudaError_t
timer_begin(const gr_timer *t, int i, cudaStream_t stream)
{
    cudaError_t err = t->flush ? cudaMemsetAsync(t->flush, i & 0xff, t->flush_bytes, stream) : cudaSuccess;
    return err == cudaSuccess ? cudaEventRecord(t->start, stream) : err;
}

/* Stop the clock on `stream`, wait for it, and give the interval in microseconds; no GIL needed. */
static cudaError_t
timer_end(const gr_timer *t, cudaStream_t stream, double *us)
{
    float ms = 0;
    cudaError_t err = cudaEventRecord(t->stop, stream);
    if (err == cudaSuccess) err = cudaEventSynchronize(t->stop);
    if (err == cudaSuccess) err = cudaEventElapsedTime(&ms, t->start, t->stop);
    *us = 1e3 * (double)ms;
    return err;
}

/* Room for `per_call` times of each of `repeats` timed calls (made after `warmup` more): NULL with a ValueError
 * for counts out of range, or a MemoryError. */
static double *
times_for(int repeats, int warmup, int per_call)
{
    if (repeats < 1 || warmup < 0) {
        PyErr_Format(PyExc_ValueError, "repeats must be >= 1 and warmup >= 0 (got %d and %d)", repeats, warmup);
        return NULL;
    }
    double *times = PyMem_Malloc(sizeof(double) * (size_t)per_call * (size_t)repeats);
    if (!times) PyErr_NoMemory();
    return times;
}

typedef enum { CEILING_READ, CEILING_COPY, CEILING_H2D, CEILING_D2H } ceiling;

/* One timed ceiling: the read kernel, a device-to-device copy, or a copy between the input and the pinned host
 * buffer `host` (the ceiling of host-array calls). */
static cudaError_t
run_ceiling(ceiling what, const gr_operand *in, size_t in_bytes, gr_exec *ex, void *host, int sm_count,
            gr_status *st, int *cuda_error)
{
    *st = GR_OK;
    switch (what) {
    case CEILING_READ:
        *st = gr_read_ceiling(in->ptr, in_bytes, ex->result, sm_count, ex->stream, cuda_error);
        return cudaSuccess;
    case CEILING_H2D: /* the input's own bytes back into it (host holds them): the caller's array keeps its values */
        return cudaMemcpyAsync(in->ptr, host, in_bytes, cudaMemcpyHostToDevice, ex->stream);
    case CEILING_D2H:
        return cudaMemcpyAsync(host, in->ptr, in_bytes, cudaMemcpyDeviceToHost, ex->stream);
    case CEILING_COPY:
    default:
        return cudaMemcpyAsync(ex->staging, in->ptr, in_bytes, cudaMemcpyDeviceToDevice, ex->stream);
    }
}

/* Free time_ceiling's pinned buffer once no copy on `stream` can still touch it; no GIL needed. */
static cudaError_t
free_host_buffer(void *host, cudaStream_t stream)
{
    if (!host) return cudaSuccess;
    cudaError_t err = cudaStreamSynchronize(stream);
    cudaError_t freed = cudaFreeHost(host);
    return err != cudaSuccess ? err : freed;
}

/* time_ceiling(what, a, repeats, warmup=3, flush_l2=True) -> times_us of the bound on a kernel over the dense
 * device array `a`: 'read' (every byte read once), 'copy' (device to device), 'h2d' / 'd2h' (pinned host). */
PyObject *
gr_py_time_ceiling(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"what", "a", "repeats", "warmup", "flush_l2", NULL};
    static const char *const names[] = {"read", "copy", "h2d", "d2h"};
    const char *what_name;
    PyObject *obj;
    int repeats, warmup = 3, flush_l2 = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sOi|ip:time_ceiling", kwlist, &what_name, &obj, &repeats, &warmup,
                                     &flush_l2))
        return NULL;
    int what = -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(what_name, names[i])) what = i;
    if (what < 0) {
        PyErr_Format(PyExc_ValueError, "what=%s: expected 'read', 'copy', 'h2d' or 'd2h'", what_name);
        return NULL;
    }
    double *times = times_for(repeats, warmup, 1);
    if (!times) return NULL;
    PyObject *result = NULL;
    gr_exec *ex = NULL;
    void *host = NULL; /* h2d, d2h: pinned host memory of the input's size, this call's own */
    gr_timer timer = {0};
    PyObject *operand = gr_intake(module, obj, "the input");
    if (!operand) goto fail;
    const gr_operand *in = gr_operand_of(module, operand, "the input");
    if (in->is_host) {
        PyErr_SetString(PyExc_TypeError,
                        "time_ceiling times device arrays: pass a DeviceArray (_core.to_device) or a CuPy/PyTorch/"
                        "Numba array");
        goto fail;
    }
    if (!(in->size <= 1 || in->strides[in->ndim - 1] == 1)) {
        PyErr_SetString(PyExc_ValueError, "time_ceiling reads dense arrays: pass a C-contiguous one");
        goto fail;
    }
    const int device = gr_current_device(module);
    if (device < 0 || gr_check_operand_device(module, in, device, "the input") < 0) goto fail;
    const size_t in_bytes = (size_t)in->size * gr_dtype_itemsize(in->dtype);
    const int transfer = what == CEILING_H2D || what == CEILING_D2H;
    const int sm_count = gr_device_sm_count(device);
    if (!(ex = gr_exec_acquire(module, device))) goto fail;
    if (gr_exec_reserve_workspace(module, ex, GR_WORKSPACE_ZEROED_BYTES) < 0 ||
        gr_exec_reserve_pinned(module, ex, GR_RESULT_BYTES) < 0 ||
        (!transfer && gr_exec_reserve_staging(module, ex, in_bytes) < 0) || gr_exec_begin(module, ex, ex->stream) < 0)
        goto fail;
    if (timer_open(module, device, flush_l2, &timer) < 0) goto fail;
    if (transfer) {
        cudaError_t alloc_err;
        Py_BEGIN_ALLOW_THREADS
        alloc_err = cudaMallocHost(&host, in_bytes); /* page-locking many MiB takes a while: without the GIL */
        Py_END_ALLOW_THREADS
        if (alloc_err != cudaSuccess) {
            host = NULL;
            gr_raise_cuda(module, alloc_err, "allocating time_ceiling's pinned host buffer");
            goto fail;
        }
    }

    cudaError_t err = cudaSuccess;
    gr_status st = GR_OK;
    int cuda_error = 0;
    Py_BEGIN_ALLOW_THREADS
    /* the producer's work (e.g. filling the input) completes first */
    if (in->has_stream) err = cudaStreamSynchronize(in->stream);
    /* h2d writes the input: its own bytes, fetched first (untimed) */
    if (err == cudaSuccess && what == CEILING_H2D)
        err = cudaMemcpyAsync(host, in->ptr, in_bytes, cudaMemcpyDeviceToHost, ex->stream);
    for (int i = 0; i < warmup + repeats && err == cudaSuccess && st == GR_OK; i++) {
        double us = 0;
        err = timer_begin(&timer, i, ex->stream);
        if (err == cudaSuccess) err = run_ceiling((ceiling)what, in, in_bytes, ex, host, sm_count, &st, &cuda_error);
        if (err == cudaSuccess && st == GR_OK) err = timer_end(&timer, ex->stream, &us);
        if (i >= warmup) times[i - warmup] = us;
    }
    if (host) {
        const cudaError_t freed = free_host_buffer(host, ex->stream);
        host = NULL;
        if (err == cudaSuccess) err = freed;
    }
    Py_END_ALLOW_THREADS
    if (err == cudaSuccess) err = gr_exec_end(ex, ex->stream, 0); /* the next call on another stream waits for it */
    if (err != cudaSuccess) {
        gr_raise_cuda(module, err, "time_ceiling");
        goto fail;
    }
    if (st != GR_OK) {
        gr_raise_status(module, st, cuda_error, "time_ceiling");
        goto fail;
    }
    result = gr_float_list(times, repeats);
fail:
    timer_close(&timer);
    PyMem_Free(times);
    if (ex) {
        if (host) (void)free_host_buffer(host, ex->stream); /* already failing: the first error is the one raised */
        if (!result) ex->dirty = 1;
        gr_exec_release(ex);
    }
    Py_XDECREF(operand);
    return result;
}

/* time_device(plan, repeats, warmup=3, flush_l2=True) -> (times_us, result): the plan run once by the runner (its
 * ordering, uploads and result), then its kernels launched again for each warm-up and timed call. */
PyObject *
gr_py_time_device(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"plan", "repeats", "warmup", "flush_l2", NULL};
    PyObject *plan;
    int repeats, warmup = 3, flush_l2 = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|ip:time_device", kwlist, &plan, &repeats, &warmup, &flush_l2))
        return NULL;
    const gr_plan *p = gr_plan_of(module, plan);
    /* a plan's ranges (a segmented reduction) travel in its job: the timed launches read the bounds it placed */
    if (p && (p->in->is_host || (p->mask && p->mask->is_host) || (p->second && p->second->is_host) ||
              (p->bounds && p->bounds->is_host))) {
        PyErr_SetString(PyExc_TypeError, "time_device times plans of device arrays: pass a DeviceArray "
                                         "(_core.to_device) or a CuPy/PyTorch/Numba array");
        return NULL;
    }
    double *times = p ? times_for(repeats, warmup, 1) : NULL;
    gr_job *job = times ? gr_job_prepare(module, plan) : NULL;
    gr_timer timer = {0};
    if (!job || gr_job_check_timeable(job) < 0 || timer_open(module, gr_job_device(job), flush_l2, &timer) < 0)
        goto fail;
    gr_outcome *o = gr_job_outcome(job);
    const cudaStream_t stream = gr_job_stream(job);
    Py_BEGIN_ALLOW_THREADS
    gr_job_enqueue(job); /* after the operands' streams; the result made */
    for (int i = 0; i < warmup + repeats && gr_outcome_ok(o); i++) {
        double us = 0;
        gr_outcome_keep(o, timer_begin(&timer, i, stream), "timing");
        gr_job_launch(job);
        if (gr_outcome_ok(o)) gr_outcome_keep(o, timer_end(&timer, stream, &us), "timing");
        if (i >= warmup) times[i - warmup] = us;
    }
    gr_job_complete(job);
    Py_END_ALLOW_THREADS
    timer_close(&timer);
    PyObject *value = gr_job_finish(module, job); /* raises what went wrong */
    PyObject *list = value ? gr_float_list(times, repeats) : NULL;
    PyMem_Free(times);
    if (!list) {
        Py_XDECREF(value);
        return NULL;
    }
    return Py_BuildValue("(NN)", list, value);
fail:
    timer_close(&timer);
    PyMem_Free(times);
    if (job) gr_job_discard(job);
    return NULL;
}

PyObject *
gr_py_time_calls(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"fn", "repeats", "warmup", "flush_l2", NULL};
    PyObject *fn;
    int repeats, warmup = 3, flush_l2 = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|ip:time_calls", kwlist, &fn, &repeats, &warmup, &flush_l2))
        return NULL;
    if (!PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "time_calls: fn must be callable, not %.200s", Py_TYPE(fn)->tp_name);
        return NULL;
    }
    double *times = times_for(repeats, warmup, 1);
    if (!times) return NULL;
    /* The legacy default stream waits for, and is waited on by, every blocking stream (CuPy's and PyTorch's
     * default ones included), so its events bracket whatever such a call enqueues. */
    const cudaStream_t stream = cudaStreamLegacy;
    gr_timer timer = {0};
    PyObject *result = NULL;
    const int device = gr_current_device(module);
    if (device < 0 || timer_open(module, device, flush_l2, &timer) < 0) goto done;
    for (int i = 0; i < warmup + repeats; i++) {
        double us = 0;
        cudaError_t err = timer_begin(&timer, i, stream);
        if (err == cudaSuccess) {
            PyObject *r = PyObject_CallNoArgs(fn);
            if (!r) goto done;
            Py_BEGIN_ALLOW_THREADS
            err = timer_end(&timer, stream, &us);
            Py_END_ALLOW_THREADS
            Py_DECREF(r); /* after the stop: freeing the result is not the call's work */
        }
        if (err != cudaSuccess) {
            gr_raise_cuda(module, err, "time_calls");
            goto done;
        }
        if (i >= warmup) times[i - warmup] = us;
    }
    result = gr_float_list(times, repeats);
done:
    timer_close(&timer);
    PyMem_Free(times);
    return result;
}

/* ---------------------------------------------------------------- the runner's stages (host clock) */

static double
now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e6 * (double)ts.tv_sec + 1e-3 * (double)ts.tv_nsec;
}

static int
compare_doubles(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), compare_doubles);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* time_stages(plan, repeats, warmup=10) -> {stage: median microseconds} of the runner's stages (run.c):
 * prepare (plan read, checks, lease, result object), enqueue (uploads, launch), complete (download or wait),
 * finish (the result object, release).  Where a call's wall-clock goes, for benchmarks/bench_overhead.py. */
PyObject *
gr_py_time_stages(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"plan", "repeats", "warmup", NULL};
    static const char *const names[] = {"prepare", "enqueue", "complete", "finish"};
    enum { STAGES = 4 };
    PyObject *plan, *result = NULL;
    int repeats, warmup = 10;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "Oi|i:time_stages", kwlist, &plan, &repeats, &warmup)) return NULL;
    double *times = times_for(repeats, warmup, STAGES);
    if (!times) return NULL;
    for (int i = 0; i < warmup + repeats; i++) {
        double t[STAGES + 1];
        t[0] = now_us();
        gr_job *job = gr_job_prepare(module, plan);
        if (!job) goto done;
        t[1] = now_us();
        Py_BEGIN_ALLOW_THREADS
        gr_job_enqueue(job);
        t[2] = now_us();
        gr_job_complete(job);
        t[3] = now_us();
        Py_END_ALLOW_THREADS
        PyObject *r = gr_job_finish(module, job);
        t[4] = now_us();
        if (!r) goto done;
        Py_DECREF(r);
        if (i >= warmup)
            for (int s = 0; s < STAGES; s++) times[s * repeats + (i - warmup)] = t[s + 1] - t[s];
    }
    result = PyDict_New();
    for (int s = 0; result && s < STAGES; s++) {
        PyObject *v = PyFloat_FromDouble(median(times + s * repeats, repeats));
        if (!v || PyDict_SetItemString(result, names[s], v) < 0) Py_CLEAR(result);
        Py_XDECREF(v);
    }
done:
    PyMem_Free(times);
    return result;
}
