/* stream_host_check.c -- src/stream_host.c's chunking, carries and downloads, and src/transfer.c's staged
 * copies, checked on the CPU.
 *
 * The streaming plan (rows, pieces, slabs), the offsets of every chunk, the carried element or row, the casts
 * behind it and the two ways home (pinned result, ring) are host-side logic; a GPU run is needed only for the
 * kernels.  Here every CUDA call and kernel launcher stream_host.c uses is a CPU stand-in over host memory (the
 * "device" buffers are malloc'd, the kernels fold in a simple loop), and, as on a GPU, nothing enqueued runs
 * when it is enqueued: copies, kernels and casts wait in a queue until an event or the stream is synchronised,
 * so a host copy into a ring slot that a pending DMA still reads, or a copy-out before its download, gives a
 * wrong result.  Each streamed result is
 * compared with a direct reduction or scan of the whole input; transfer.c's uploads and downloads (pieces,
 * ring, pinned destination) make a round trip of every size around their boundaries.  Built and run by
 * tests/test_stream_host_cpu.py.
 */
#include "job.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- one stream: a queue run at synchronisations */

typedef enum { OP_COPY, OP_REDUCE, OP_SCAN, OP_CAST } op_kind;
typedef struct {
    op_kind kind;
    void *dst;
    const void *src;
    size_t bytes;           /* OP_COPY */
    gr_args a;              /* OP_REDUCE, OP_SCAN */
    gr_segments s;
    char initial[16];       /* a copy: the caller's initial value need not outlive the call */
    int64_t count, in_stride, out_stride; /* OP_CAST */
    gr_dtype in_dtype, out_dtype;
} queued;

#define QUEUE_MAX (1 << 16)
static queued g_queue[QUEUE_MAX];
static long g_queued, g_ran;
#define EVENTS 16
static long g_event_at[EVENTS]; /* the queue position each event was recorded at */

static void run_one(queued *q);

static queued *
enqueue(op_kind kind)
{
    if (g_queued == QUEUE_MAX) {
        fprintf(stderr, "stream_host_check: the stand-in queue is full\n");
        abort();
    }
    queued *q = &g_queue[g_queued++];
    memset(q, 0, sizeof(*q));
    q->kind = kind;
    return q;
}

static void
run_to(long position)
{
    while (g_ran < position) run_one(&g_queue[g_ran++]);
}

static void
reset_queue(void)
{
    run_to(g_queued);
    g_queued = g_ran = 0;
    memset(g_event_at, 0, sizeof(g_event_at));
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    (void)kind, (void)stream;
    queued *q = enqueue(OP_COPY);
    q->dst = dst, q->src = src, q->bytes = count;
    return cudaSuccess;
}
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t stream)
{
    for (size_t i = 0; i < height; i++) cudaMemcpyAsync((char *)dst + i * dpitch, (const char *)src + i * spitch,
                                                        width, kind, stream);
    return cudaSuccess;
}
static long event_index(cudaEvent_t event) { return (long)(intptr_t)event % EVENTS; }
cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    run_to(g_event_at[event_index(event)]);
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    (void)stream;
    g_event_at[event_index(event)] = g_queued;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    run_to(g_queued);
    return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)stream, (void)event, (void)flags;
    return cudaSuccess;
}

/* ---------------------------------------------------------------- the kernels, as loops (double: data is exact) */

static float h2f(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    uint32_t bits; float f;
    if (exp == 0x1fu) bits = sign | 0x7f800000u | (man << 13);
    else if (exp) bits = sign | ((exp + 112u) << 23) | (man << 13);
    else { f = (float)man * 0x1p-24f; memcpy(&bits, &f, 4); bits |= sign; }
    memcpy(&f, &bits, 4); return f;
}
static uint16_t f2h(double v) /* round to nearest even, via exhaustive search of the neighbours */
{
    /* brute: find the float16 nearest to v (ties to even) among all finite values */
    static float table[65536]; static int ready;
    if (!ready) { for (int i = 0; i < 65536; i++) table[i] = h2f((uint16_t)i); ready = 1; }
    if (v != v) return 0x7e00;
    if (v >= 65520.0) return 0x7c00;
    if (v <= -65520.0) return 0xfc00;
    uint16_t best = 0; double bd = 1e300;
    /* positive magnitudes 0..0x7bff are monotonic: binary search */
    double a = v < 0 ? -v : v;
    int lo = 0, hi = 0x7bff;
    while (lo < hi) { int mid = (lo + hi + 1) / 2; if (table[mid] <= a) lo = mid; else hi = mid - 1; }
    for (int c = lo; c <= lo + 1 && c <= 0x7bff; c++) {
        double d = a - table[c]; if (d < 0) d = -d;
        if (d < bd || (d == bd && (c & 1) == 0)) { bd = d; best = (uint16_t)c; }
    }
    return (uint16_t)(best | (v < 0 ? 0x8000 : 0));
}
static double get(const void *p, gr_dtype dt, int64_t i)
{
    switch (dt) {
    case GR_FLOAT16: return h2f(((const uint16_t *)p)[i]);
    case GR_FLOAT32: return ((const float *)p)[i];
    case GR_INT32: return ((const int32_t *)p)[i];
    case GR_INT64: return (double)((const int64_t *)p)[i];
    default: return ((const double *)p)[i];
    }
}
static long g_launch_bad_pair;
static int g_cub;
static int bad_pair(const gr_args *a) { return g_cub && a->in_dtype != a->out_dtype && a->in_dtype == GR_FLOAT16; }
static void put(void *p, gr_dtype dt, int64_t i, double v)
{
    switch (dt) {
    case GR_FLOAT16: ((uint16_t *)p)[i] = f2h(v); break;
    case GR_FLOAT32: ((float *)p)[i] = (float)v; break;
    case GR_INT32: ((int32_t *)p)[i] = (int32_t)v; break;
    case GR_INT64: ((int64_t *)p)[i] = (int64_t)v; break;
    default: ((double *)p)[i] = v;
    }
}
static double identity(gr_op op)
{
    return op == GR_OP_SUM ? 0 : op == GR_OP_PROD ? 1 : op == GR_OP_MIN ? 1e300 : -1e300;
}
static double fold(gr_op op, double a, double b)
{
    return op == GR_OP_SUM ? a + b : op == GR_OP_PROD ? a * b : op == GR_OP_MIN ? (b < a ? b : a) : (b > a ? b : a);
}

static long g_launches;

static gr_status reduce_now(const gr_args *a, const gr_segments *s, int *cuda_error)
{
    (void)cuda_error;
    for (int64_t i0 = 0; i0 < s->count[0]; i0++)
        for (int64_t i1 = 0; i1 < s->count[1]; i1++) {
            double acc = s->initial ? get(s->initial, a->out_dtype, 0) : identity(a->op);
            for (int64_t r = 0; r < s->reduce_count; r++)
                acc = fold(a->op, acc, get(a->in, a->in_dtype, i0 * s->in_stride[0] + i1 * s->in_stride[1] +
                                                                     r * s->reduce_in_stride));
            put(a->out, a->out_dtype, i0 * s->out_stride[0] + i1 * s->out_stride[1], acc);
        }
    return GR_OK;
}
static gr_status scan_now(const gr_args *a, const gr_segments *s, int *cuda_error)
{
    (void)cuda_error;
    for (int64_t i0 = 0; i0 < s->count[0]; i0++)
        for (int64_t i1 = 0; i1 < s->count[1]; i1++) {
            double acc = identity(a->op);
            for (int64_t r = 0; r < s->reduce_count; r++) {
                const double x = get(a->in, a->in_dtype, i0 * s->in_stride[0] + i1 * s->in_stride[1] +
                                                            r * s->reduce_in_stride);
                const double before = acc;
                acc = fold(a->op, acc, x);
                put(a->out, a->out_dtype, i0 * s->out_stride[0] + i1 * s->out_stride[1] + r * s->reduce_out_stride,
                    a->exclusive ? before : acc);
            }
        }
    return GR_OK;
}

static gr_status
launch_later(op_kind kind, const gr_args *a, const gr_segments *s)
{
    if (!a->out || (!a->in && s->reduce_count > 0)) return GR_ERR_INVALID_ARGUMENT;
    if (bad_pair(a)) { g_launch_bad_pair++; return GR_ERR_UNSUPPORTED_DTYPE; }
    /* a launch into float16 from float32 never happens: the segment kernels have no such pair */
    if (a->out_dtype == GR_FLOAT16 && a->in_dtype != GR_FLOAT16) { g_launch_bad_pair++; return GR_ERR_UNSUPPORTED_DTYPE; }
    g_launches++;
    queued *q = enqueue(kind);
    q->a = *a, q->s = *s;
    if (s->initial) {
        memcpy(q->initial, s->initial, gr_dtype_itemsize(a->out_dtype));
        q->s.initial = q->initial;
    }
    return GR_OK;
}
gr_status gr_reduce_segments(const gr_args *a, const gr_segments *s, int *e)
{
    (void)e;
    return launch_later(OP_REDUCE, a, s);
}
gr_status gr_scan_segments(const gr_args *a, const gr_segments *s, int *e)
{
    (void)e;
    return launch_later(OP_SCAN, a, s);
}

static gr_segments one_row(const gr_args *a)
{
    gr_segments s = {.count = {1, 1}, .reduce_count = a->n, .reduce_in_stride = 1, .reduce_out_stride = 1};
    return s;
}
gr_status gr_reduce(const gr_args *a, int *e) { gr_segments s = one_row(a); return gr_reduce_segments(a, &s, e); }
gr_status gr_scan(const gr_args *a, int *e) { gr_segments s = one_row(a); return gr_scan_segments(a, &s, e); }
gr_status gr_workspace_size(const gr_args *a, size_t *b, int *e) { (void)a, (void)e; *b = 256; return GR_OK; }
gr_status gr_reduce_segments_workspace(const gr_args *a, const gr_segments *s, size_t *b, int *e)
{
    (void)a, (void)s, (void)e;
    if (bad_pair(a)) return GR_ERR_UNSUPPORTED_DTYPE;
    *b = 512;
    return GR_OK;
}
gr_status gr_scan_segments_workspace(const gr_args *a, const gr_segments *s, size_t *b, int *e)
{
    (void)a, (void)s, (void)e;
    if (bad_pair(a)) return GR_ERR_UNSUPPORTED_DTYPE;
    *b = 1024;
    return GR_OK;
}
gr_status gr_copy_strided(gr_dtype in_dtype, gr_dtype out_dtype, int ndim, const int64_t *shape,
                          const int64_t *in_strides, const int64_t *out_strides, const void *in, void *out,
                          int sm_count, void *stream, int *cuda_error)
{
    (void)ndim, (void)sm_count, (void)stream, (void)cuda_error;
    queued *q = enqueue(OP_CAST);
    q->dst = out, q->src = in, q->count = shape[0], q->in_stride = in_strides[0], q->out_stride = out_strides[0];
    q->in_dtype = in_dtype, q->out_dtype = out_dtype;
    return GR_OK;
}

static void
run_one(queued *q)
{
    switch (q->kind) {
    case OP_COPY: memmove(q->dst, q->src, q->bytes); break;
    case OP_REDUCE: reduce_now(&q->a, &q->s, NULL); break;
    case OP_SCAN: scan_now(&q->a, &q->s, NULL); break;
    case OP_CAST:
        for (int64_t i = 0; i < q->count; i++)
            put(q->dst, q->out_dtype, i * q->out_stride, get(q->src, q->in_dtype, i * q->in_stride));
        break;
    }
}
gr_dtype gr_default_result_dtype(gr_kind kind, gr_op op, gr_dtype in)
{
    (void)kind;
    return (op == GR_OP_SUM || op == GR_OP_PROD) && in == GR_INT32 ? GR_INT64 : in;
}

/* ---------------------------------------------------------------- the rest of the extension it calls */

size_t gr_dtype_itemsize(gr_dtype dt) { return dt == GR_FLOAT16 ? 2 : dt == GR_INT32 || dt == GR_FLOAT32 ? 4 : 8; }
gr_dtype gr_dtype_accumulate_as(gr_dtype dt) { return dt == GR_FLOAT16 || dt == GR_BFLOAT16 ? GR_FLOAT32 : dt; }
int gr_outcome_ok(const gr_outcome *o) { return o->err == cudaSuccess && o->st == GR_OK; }
void gr_outcome_keep(gr_outcome *o, cudaError_t err, const char *stage)
{
    if (err != cudaSuccess && gr_outcome_ok(o)) o->err = err, o->stage = stage;
}
/* job.h's Ctrl-C check (gr_job_signal_raised) with no interpreter linked: no thread state, no signal */
void PyEval_RestoreThread(PyThreadState *t) { (void)t; }
PyThreadState *PyEval_SaveThread(void) { return NULL; }
int PyErr_CheckSignals(void) { return 0; }
PyObject *gr_raise_status(PyObject *m, gr_status st, int e, const char *c)
{
    (void)m, (void)st, (void)e, (void)c;
    return NULL;
}
int gr_exec_reserve_workspace(PyObject *m, gr_exec *ex, size_t bytes)
{
    (void)m;
    if (bytes > ex->workspace_bytes) ex->workspace = realloc(ex->workspace, ex->workspace_bytes = bytes);
    return 0;
}
int gr_exec_reserve_staging(PyObject *m, gr_exec *ex, size_t bytes)
{
    (void)m;
    if (bytes > ex->staging_bytes) ex->staging = realloc(ex->staging, ex->staging_bytes = bytes);
    return 0;
}
int gr_exec_reserve_ring(PyObject *m, gr_exec *ex)
{
    (void)m;
    for (int b = 0; b < GR_RING_CHUNKS; b++) {
        if (!ex->ring[b]) ex->ring[b] = malloc(GR_RING_CHUNK_BYTES);
        ex->ring_done[b] = (cudaEvent_t)(intptr_t)(b + 1); /* an index into g_event_at */
    }
    return 0;
}
int gr_exec_reserve_transfer(PyObject *m, gr_exec *ex, size_t bytes)
{
    (void)bytes;
    return gr_exec_reserve_ring(m, ex);
}

/* ---------------------------------------------------------------- the cases */

static gr_exec g_ex;
static const gr_variant_info g_axes = {.properties = GR_PROP_AXES, .ops = 15, .dtypes = ~0u};
static int g_failed, g_cases;

typedef struct {
    const char *name;
    int kind;
    gr_op op;
    gr_dtype in, out;
    int64_t batches, len, width; /* width 1: rows of `len` (batches rows); else blocks of len rows of width */
    int flat, pinned, with_initial;
    gr_stream_mode mode;       /* what the plan must choose */
    int cub;
} check;

static void
run(const check *c)
{
    const int64_t n = c->batches * c->len * c->width;
    const int reduce = c->kind == GR_KIND_REDUCE;
    const int64_t results = reduce ? c->batches * c->width : n;
    const size_t in_item = gr_dtype_itemsize(c->in), out_item = gr_dtype_itemsize(c->out);
    char *in = malloc((size_t)n * in_item), *got = calloc((size_t)results + 1, out_item);
    char *want = calloc((size_t)results + 1, out_item);
    for (int64_t i = 0; i < n; i++) /* small integers (exact in double); products of +-1 and a few 2s */
        put(in, c->in, i,
            c->op == GR_OP_PROD ? (i % 977 == 0 ? -1 : i % 100003 == 0 ? 2 : 1)
            : c->in == GR_FLOAT16 ? (double)((i * 7919) % 201 - 100) + (((i / c->width) % c->len) < c->len / 2 ? 2 : -2)
            : (double)((i * 7919) % 2001 - 1000));
    double initial_value = 5;
    char initial[16];
    put(initial, c->out, 0, initial_value);

    /* the plan's segments, as gpureduce/_planning/layout.py gives them for a C-ordered array */
    gr_segments s = {0};
    if (c->width == 1) {
        s = (gr_segments){.count = {1, c->batches}, .in_stride = {0, c->len}, .reduce_count = c->len,
                          .reduce_in_stride = 1, .out_stride = {0, reduce ? 1 : c->len}, .reduce_out_stride = 1};
    }
    else {
        s = (gr_segments){.count = {c->batches, c->width}, .in_stride = {c->len * c->width, 1}, .reduce_count = c->len,
                          .reduce_in_stride = c->width,
                          .out_stride = {reduce ? c->width : c->len * c->width, 1}, .reduce_out_stride = c->width};
    }
    if (c->with_initial) s.initial = initial;
    gr_args a = {.op = c->op, .in_dtype = c->in, .out_dtype = c->out, .n = c->len};

    /* the reference: the whole input in one launch */
    a.in = in, a.out = want;
    if (reduce) reduce_now(&a, &s, NULL);
    else scan_now(&a, &s, NULL);

    gr_operand op_in = {.ptr = in, .dtype = c->in, .size = n, .is_host = 1};
    gr_job *j = calloc(1, sizeof(*j));
    j->kind = c->kind;
    j->info = &g_axes;
    j->flat = c->flat;
    j->a = a;
    j->a.in = NULL, j->a.out = NULL;
    j->s = s;
    j->in = &op_in;
    j->res_size = results;
    j->ex = &g_ex;
    j->outcome.stage = "";
    char scalar[16];
    if (reduce && results == 1) j->rk = RESULT_SCALAR, j->a.out = scalar;
    else j->rk = RESULT_HOST;
    char *device_result = calloc((size_t)results + 1, out_item);
    j->res_ndim = j->rk == RESULT_SCALAR ? 0 : 1;
    if (j->rk == RESULT_HOST) j->host_dst = got, j->host_dst_pinned = c->pinned;

    g_cases++;
    g_launches = 0;
    g_cub = c->cub;
    gr_stream_plan(j); /* (it reads res_ndim: set above, as make_result would from the plan) */
    if (!j->streamed.on || j->streamed.mode != c->mode) {
        printf("FAIL %s: plan on=%d mode=%d, expected mode %d\n", c->name, j->streamed.on, j->streamed.mode, c->mode);
        g_failed++;
        return;
    }
    if (gr_stream_reserve(NULL, j) < 0) {
        printf("FAIL %s: reserve\n", c->name);
        g_failed++;
        return;
    }
    if (reduce && !j->streamed.downloads) j->device_result = device_result; /* as make_result does */
    gr_stream_enqueue(j);
    cudaStreamSynchronize(NULL); /* gr_job_complete's wait */
    if (reduce && !j->streamed.downloads)
        memcpy(got, j->rk == RESULT_SCALAR ? scalar : device_result, (size_t)results * out_item);
    reset_queue();
    int64_t bad = -1;
    for (int64_t i = 0; i < results && bad < 0; i++)
        if (get(got, c->out, i) != get(want, c->out, i)) bad = i;
    if (!gr_outcome_ok(&j->outcome) || bad >= 0) {
        printf("FAIL %s: outcome %d/%d, first difference at %lld: %g != %g (%ld launches)\n", c->name, j->outcome.st,
               (int)j->outcome.err, (long long)bad, bad >= 0 ? get(got, c->out, bad) : 0.0,
               bad >= 0 ? get(want, c->out, bad) : 0.0, g_launches);
        g_failed++;
    }
    free(in), free(got), free(want), free(device_result), free(j);
}

/* Host -> "device" -> host through transfer.c, for sizes around the piece, small-path and ring boundaries. */
static void
round_trips(void)
{
    const size_t MiB = 1 << 20;
    size_t sizes[15 + 2 * 15] = {0, 1, 4095, MiB - 1, MiB, 2 * MiB - 3, 2 * MiB, 3 * MiB + 17, 4 * MiB, 4 * MiB + 1,
                                 8 * MiB - 1, 8 * MiB, 8 * MiB + 1, 3 * 8 * MiB + 5, 9 * 8 * MiB + 3};
    size_t count = 15;
    /* just past a multiple of parts x 4096 bytes, for every number of parts host_copy.c may split a copy into
     * (its part size once rounded bytes / parts down, and the last bytes % parts were never copied) */
    for (size_t parts = 2; parts <= 16; parts++) {
        const size_t whole = parts * 4096 * ((MiB + parts * 4096 - 1) / (parts * 4096));
        sizes[count++] = whole + 1;
        sizes[count++] = whole + parts - 1;
    }
    const size_t most = 9 * 8 * MiB + 3;
    char *src = malloc(most), *dev = malloc(most), *back = malloc(most + 1);
    for (size_t i = 0; i < most; i++) src[i] = (char)(i * 131 + 7);
    g_ex.pinned = realloc(g_ex.pinned, GR_RESULT_BYTES + GR_PINNED_SMALL);
    gr_exec_reserve_transfer(NULL, &g_ex, GR_RING_CHUNK_BYTES);
    for (size_t k = 0; k < count; k++)
        for (int pinned = 0; pinned < 2; pinned++) {
            const size_t n = sizes[k];
            memset(dev, 0, most), memset(back, 0x5a, most + 1);
            g_cases++;
            cudaError_t err = gr_upload_host(&g_ex, dev, src, n, NULL);
            if (err == cudaSuccess) err = gr_download_host(&g_ex, back, dev, n, pinned, NULL);
            reset_queue();
            if (err != cudaSuccess || memcmp(back, src, n) || back[n] != 0x5a) {
                printf("FAIL round trip of %zu bytes (pinned destination %d)\n", n, pinned);
                g_failed++;
            }
        }
    free(src), free(dev), free(back);
}

int
main(void)
{
    const int64_t M = 1 << 20; /* int64 elements per 8 MiB chunk */
#define R GR_KIND_REDUCE
#define S GR_KIND_SCAN
#define OP_SUM GR_OP_SUM
#define OP_PROD GR_OP_PROD
#define OP_MIN GR_OP_MIN
#define OP_MAX GR_OP_MAX
#define I32 GR_INT32
#define I64 GR_INT64
#define F64 GR_FLOAT64
#define ROWS GR_STREAM_ROWS
#define PIECES GR_STREAM_PIECES
#define SLABS GR_STREAM_SLABS
    /* name, kind, op, input and result dtypes, batches, len, width, flat, pinned result, initial=, the plan's shape */
    const check checks[] = {
        {"rows: row sums", R, OP_SUM, I64, I64, 1000, 3001, 1, 0, 0, 1, ROWS},
        {"rows: row cumsums, pageable", S, OP_SUM, I64, I64, 1000, 3001, 1, 0, 0, 0, ROWS},
        {"rows: row cummax, pinned", S, OP_MAX, I64, I64, 999, 3001, 1, 0, 1, 0, ROWS},
        {"rows: one row, flat", R, OP_SUM, I64, I64, 1, M - 3, 1, 1, 0, 0, ROWS},
        {"pieces: sum, flat", R, OP_SUM, I64, I64, 1, 3 * M + 5, 1, 1, 0, 0, PIECES},
        {"pieces: max, axes", R, OP_MAX, I64, I64, 1, 3 * M + 5, 1, 0, 0, 1, PIECES},
        {"pieces: row sums", R, OP_SUM, I64, I64, 3, 2 * M + 7, 1, 0, 0, 1, PIECES},
        {"pieces: int32 sum", R, OP_SUM, I32, I64, 1, 5 * M + 1, 1, 0, 0, 0, PIECES},
        {"pieces: cumsum, pageable", S, OP_SUM, I64, I64, 1, 3 * M + 5, 1, 1, 0, 0, PIECES},
        {"pieces: cumsum, pinned", S, OP_SUM, I64, I64, 1, 3 * M + 5, 1, 0, 1, 0, PIECES},
        {"pieces: int32 cumsum (cast)", S, OP_SUM, I32, I64, 2, 2 * M + 3, 1, 0, 0, 0, PIECES},
        {"pieces: cumprod", S, OP_PROD, F64, F64, 1, 4 * M, 1, 0, 1, 0, PIECES},
        {"slabs: column sums", R, OP_SUM, I64, I64, 1, 3001, 700, 0, 0, 0, SLABS},
        {"slabs: column min, initial", R, OP_MIN, I64, I64, 3, 2000, 701, 0, 0, 1, SLABS},
        {"slabs: int32 column sums", R, OP_SUM, I32, I64, 2, 5000, 333, 0, 0, 1, SLABS},
        {"slabs: narrow, many chunks", R, OP_SUM, F64, F64, 1, 3 * M, 3, 0, 0, 0, SLABS},
        {"slabs: one row per chunk", R, OP_MAX, I64, I64, 1, 5, M / 2, 0, 0, 0, SLABS},
        {"slabs: column cumsums, pageable", S, OP_SUM, I64, I64, 1, 3001, 700, 0, 0, 0, SLABS},
        {"slabs: column cumsums, pinned", S, OP_SUM, I64, I64, 3, 2000, 701, 0, 1, 0, SLABS},
        {"slabs: int32 column cumsums", S, OP_SUM, I32, I64, 2, 3000, 333, 0, 0, 0, SLABS},
        {"slabs: column cummin, one row per chunk", S, OP_MIN, I64, I64, 2, 7, M / 2, 0, 1, 0, SLABS},
        {"strips: wide column sums, initial", R, OP_SUM, I64, I64, 2, 20, M + 3, 0, 0, 1, SLABS},
        {"strips: wide column max, whole strips", R, OP_MAX, I64, I64, 1, 7, 2 * M, 0, 0, 0, SLABS},
        {"strips: int32 wide column sums (cast)", R, OP_SUM, I32, I64, 1, 15, 2 * M + 5, 0, 0, 0, SLABS},
        {"strips: wide column cumsums, pageable", S, OP_SUM, I64, I64, 2, 16, M + 3, 0, 0, 0, SLABS},
        {"strips: wide column cummax, pinned", S, OP_MAX, I64, I64, 1, 9, 2 * M, 0, 1, 0, SLABS},
        {"strips: int32 wide column cumsums (cast), pinned", S, OP_SUM, I32, I64, 1, 15, M + 5, 0, 1, 0, SLABS},
        {"rows: int32 cumsums, last chunk short", S, OP_SUM, I32, I64, 777, 5001, 1, 0, 0, 0, ROWS},
        {"rows: int32 cumsums, pinned", S, OP_SUM, I32, I64, 777, 5001, 1, 0, 1, 0, ROWS},
        {"rows: int32 row sums", R, OP_SUM, I32, I64, 3000, 2001, 1, 0, 0, 1, ROWS},
        {"rows: int32 row sums, pinned", R, OP_SUM, I32, I64, 3000, 2001, 1, 0, 1, 0, ROWS},
        {"rows: one row a chunk long", S, OP_SUM, I32, I64, 3, M, 1, 0, 0, 0, ROWS},
        {"pieces: rows of whole chunks", R, OP_SUM, I64, I64, 2, 3 * M, 1, 0, 0, 0, PIECES},
        {"pieces: scans of whole chunks", S, OP_SUM, I64, I64, 2, 3 * M, 1, 0, 0, 0, PIECES},
        {"pieces: int32 cummax, pinned", S, OP_MAX, I32, I32, 2, 4 * M + 9, 1, 0, 1, 0, PIECES},
        {"pieces: int32 sum, flat", R, OP_SUM, I32, I64, 1, 9 * M + 1, 1, 1, 0, 0, PIECES},
        {"slabs: whole chunks of rows", R, OP_SUM, I64, I64, 2, 3 * (M / 4 - 1), 4, 0, 0, 0, SLABS},
        {"slabs: whole chunks of rows, scan", S, OP_SUM, I64, I64, 2, 3 * (M / 4 - 1), 4, 0, 0, 0, SLABS},
        {"slabs: int32 cumsums, half-chunk rows", S, OP_SUM, I32, I64, 2, 9, M / 2, 0, 1, 0, SLABS},
        {"slabs: int32 sums, half-chunk rows", R, OP_SUM, I32, I64, 2, 9, M, 0, 0, 0, SLABS},
#define F16 GR_FLOAT16
        {"h pieces: sum", R, OP_SUM, F16, F16, 1, 5 * M + 1, 1, 0, 0, 0, PIECES, 0},
        {"h pieces: sum initial cub", R, OP_SUM, F16, F16, 1, 5 * M + 1, 1, 0, 0, 1, PIECES, 1},
        {"h pieces: row sums", R, OP_SUM, F16, F16, 3, 2 * M + 7, 1, 0, 0, 1, PIECES, 0},
        {"h pieces: max", R, OP_MAX, F16, F16, 1, 5 * M + 1, 1, 0, 0, 1, PIECES, 0},
        {"h pieces: cumsum", S, OP_SUM, F16, F16, 1, 3 * M + 5, 1, 0, 0, 0, PIECES, 0},
        {"h pieces: cumsum pinned cub", S, OP_SUM, F16, F16, 2, 2 * M + 5, 1, 0, 1, 0, PIECES, 1},
        {"h pieces: cummin", S, OP_MIN, F16, F16, 1, 5 * M + 5, 1, 0, 0, 0, PIECES, 0},
        {"h pieces: cumprod", S, OP_PROD, F16, F16, 1, 3 * M + 5, 1, 0, 0, 0, PIECES, 0},
        {"h slabs: column sums", R, OP_SUM, F16, F16, 1, 30001, 70, 0, 0, 0, SLABS, 0},
        {"h slabs: column sums initial cub", R, OP_SUM, F16, F16, 3, 20001, 71, 0, 0, 1, SLABS, 1},
        {"h slabs: column max initial", R, OP_MAX, F16, F16, 3, 20001, 71, 0, 0, 1, SLABS, 0},
        {"h slabs: column cumsums", S, OP_SUM, F16, F16, 2, 20001, 70, 0, 0, 0, SLABS, 0},
        {"h slabs: column cumsums pinned cub", S, OP_SUM, F16, F16, 2, 20001, 70, 0, 1, 0, SLABS, 1},
        {"h strips: wide column sums", R, OP_SUM, F16, F16, 2, 9, 2 * M + 3, 0, 0, 1, SLABS, 0},
        {"h strips: wide column sums cub", R, OP_SUM, F16, F16, 1, 9, 2 * M + 3, 0, 0, 0, SLABS, 1},
        {"h strips: wide column cumsums", S, OP_SUM, F16, F16, 2, 9, M + 3, 0, 0, 0, SLABS, 0},
        {"h strips: wide column cumsums cub", S, OP_SUM, F16, F16, 1, 9, M + 3, 0, 1, 0, SLABS, 1},
        {"h rows: row sums", R, OP_SUM, F16, F16, 3000, 2001, 1, 0, 0, 1, ROWS, 0},
        {"h rows: row cumsums", S, OP_SUM, F16, F16, 777, 5001, 1, 0, 0, 0, ROWS, 0},
        {"h rows: row cumsums cub", S, OP_SUM, F16, F16, 777, 5001, 1, 0, 1, 0, ROWS, 1},
    };
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) run(&checks[i]);
    printf("launches of an unsupported pair: %ld\n", g_launch_bad_pair);
    round_trips();
    printf("%d of %d streamed calls and round trips came out right\n", g_cases - g_failed, g_cases);
    return g_failed ? 1 : 0;
}
