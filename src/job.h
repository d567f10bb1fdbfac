/* job.h -- one call's device work as the runner holds it: shared by run.c (the stages) and stream_host.c (host
 * inputs streamed through the device chunk by chunk).  Private to those two files. */
#ifndef GPUREDUCE_JOB_H
#define GPUREDUCE_JOB_H

#include "ext.h"

typedef enum { RESULT_OUT, RESULT_SCALAR, RESULT_HOST, RESULT_DEVICE } result_kind;

/* A host operand's bytes: the span its view touches, uploaded to device memory. */
typedef struct {
    const char *lo;       /* lowest byte the view touches */
    size_t bytes;         /* from lo to past the highest element; 0 for an empty operand */
    ptrdiff_t first;      /* element (0, ..., 0) - lo, in bytes */
    void *device;         /* where it goes: the exec's staging buffer or pool memory (NULL when streamed) */
    int pooled;           /* device is pool memory: freed after the work */
} host_span;

/* A host input streamed through the device (stream_host.c), in one of three shapes:
 *   ROWS    `rows` rows of `len` contiguous elements reduced or scanned along the row; whole rows per chunk
 *   PIECES  the same with rows longer than a chunk: each chunk one piece of a row
 *   SLABS   `rows` blocks of `len` rows of `width` contiguous elements, reduced or scanned across the rows
 *           (a column sum); whole rows per chunk, each block's running result carried as one more row; rows
 *           wider than half a chunk go strip by strip of `strip` columns */
typedef enum { GR_STREAM_ROWS, GR_STREAM_PIECES, GR_STREAM_SLABS } gr_stream_mode;

typedef struct {
    int on;
    gr_stream_mode mode;
    int64_t rows, len, width;
    int64_t chunk;          /* elements per chunk (the last of a row or of the array may be shorter) */
    int64_t rows_per_chunk; /* ROWS: whole rows per chunk; SLABS: rows of `strip` per chunk, the carry besides */
    int64_t strip;          /* SLABS: columns per launch, `width` or (rows wider than half a chunk) a part of it */
    int64_t pieces;         /* PIECES: pieces per row */
    int downloads;          /* the results go to the host chunk by chunk (scans; reductions of ROWS into an array) */
    gr_dtype work_dtype;    /* what partials, carries and running rows are held in: the result dtype's accumulator
                               (float16, bfloat16 -> float32) for sums, products and their scans, else the result
                               dtype; cast to the result dtype once, where the caller's results are made */
    int cast_in;            /* PIECES, SLABS: no kernel reads the input into the work dtype (CUB's, logcumsumexp's),
                               so a chunk from the input is cast to it first, behind dev_carry's first row */
    const void *initial;    /* initial= in the work dtype (host memory), or NULL */
    char work_initial[16];  /* its bytes, where the work dtype is not the result dtype */
    void *dev_in;           /* the chunk as uploaded (input dtype) */
    void *dev_carry;        /* the carried element or row, then the chunk behind it, in the work dtype */
    void *dev_out;          /* scans: the chunk's result in the work dtype (one element or row more: the carry slot);
                               SLABS reductions into another dtype: the strip's running row in the work dtype */
    void *partials;         /* reductions cut into pieces: one result per piece of the row (work dtype), and the
                               row's combined result before its cast where the result dtype is another */
    void *dev_cast;         /* scans whose result dtype is not the work dtype: the chunk's results cast, to go home */
} gr_streaming;

struct gr_job {
    PyObject *plan;                  /* a reference to the _core.Plan: keeps the operands alive */
    const gr_plan *p;                /* what it says (src/plan.c) */
    int kind;
    const gr_variant_info *info;
    int flat;                        /* the variant's whole-array launcher (gr_reduce / gr_scan) */
    gr_args a;
    gr_segments s;
    const gr_operand *in, *mask, *out; /* mask: where=, or the second operand read at its strides */
    const gr_operand *bounds;        /* a segmented reduction's ranges (plan.c): their int64 bounds, else NULL ... */
    const gr_operand *stops;         /* ... their device stops apart from the starts, else NULL ... */
    gr_ranges ranges;                /* ... and what the kernels read of them (s.ranges points here) */
    int res_ndim;
    int64_t res_size;

    int device;
    gr_exec *ex;
    cudaStream_t stream;
    host_span up_in, up_mask, up_bounds;
    gr_streaming streamed;
    void *aside;                     /* a copy of the input the kernel reads because out= overlaps it */
    size_t aside_bytes;
    const void *aside_src;
    result_kind rk;
    int scalar_in_pinned;            /* RESULT_SCALAR written straight into the exec's pinned memory */
    PyObject *result;
    void *device_result;             /* RESULT_HOST: pool memory downloaded into host_dst */
    void *host_dst;
    int host_dst_pinned;             /* host_dst is pinned memory (pinned_results.c): DMA lands in it directly */
    size_t out_bytes;
    cudaStream_t waits[10], releases[3];
    int n_waits, n_releases;
    int sync;
    int captured;                    /* the work stream is capturing a CUDA graph: the graph owns its buffers */
    int contained;                   /* touches no exec buffer and runs alike captured or not (run.c: contained) */
    void *graph_workspace;           /* captured: the workspace, pool memory allocated and freed in the graph */
    PyThreadState **gil;             /* gr_py_run's saved thread state: streaming looks for Ctrl-C with it */
    int interrupted;                 /* a signal handler raised between stages: skip the download, raise it */
    gr_outcome outcome;
};

/* Whether a signal handler raised (its exception is then set), the GIL taken back for the check.  Handlers
 * run in the main thread only: elsewhere this is always 0.  0 when the job has no saved thread state. */
static inline int
gr_job_signal_raised(gr_job *j)
{
    if (!j->gil) return 0;
    PyEval_RestoreThread(*j->gil);
    const int raised = PyErr_CheckSignals() < 0;
    *j->gil = PyEval_SaveThread();
    return raised;
}

/* ---- stream_host.c ---- */
/* Decide whether the job streams its host input (j->streamed.on) and lay out its chunks.  Called once the
 * plan is read and the launcher chosen, before the result is made. */
void gr_stream_plan(gr_job *j);
/* Reserve the exec's staging and pinned ring for the streamed job.  0, or -1 with an exception. */
int gr_stream_reserve(PyObject *module, gr_job *j);
/* Enqueue the whole streamed job (no GIL): upload, kernels and, for scans, downloads, chunk by chunk.  The
 * result of a reduction is where j->a.out says once the stream reaches it; a scan's is in j->host_dst. */
void gr_stream_enqueue(gr_job *j);

#endif /* GPUREDUCE_JOB_H */
