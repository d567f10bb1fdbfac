/* stream_host.c -- host inputs streamed through the device chunk by chunk (issue 13).
 *
 * A host array bigger than the exec's small pinned buffer is not uploaded whole: it moves in chunks of at most
 * GR_RING_CHUNK_BYTES through the exec's ring of pinned chunks, each chunk's kernel run as soon as it has
 * arrived, while the CPU threads of host_copy.c already copy the next chunks into the ring.  The device holds a
 * few chunks, never the array, so arrays larger than the device's memory reduce and scan too.
 *
 * The plan's segments, when they lie one after another in memory, take one of three shapes (job.h):
 *   ROWS     rows of contiguous elements reduced or scanned along the row, whole rows per chunk;
 *   PIECES   rows longer than a chunk, cut into pieces of at most a chunk (piece_of): a reduction's pieces go
 *            to `partials`, reduced in order into the row's result (sum, prod, min, max; initial= applied
 *            there); a scan's piece p > 0 is scanned behind a carry element, the last result of piece p - 1,
 *            and its output after the carry is the piece's result;
 *   SLABS    blocks of rows reduced or scanned across the rows (a column sum of a C-ordered matrix), whole
 *            rows per chunk: chunk c > 0 is reduced or scanned behind a carried row, the running result so far.
 *            Rows wider than half a chunk run strip by strip (1/GR_STREAM_STRIPS of a chunk's columns each,
 *            gathered from the rows on the host, a scan's results scattered back), each strip a slab of its own.
 * A scan's results, and the row results of a reduction into an array (ROWS), go to the host as each chunk
 * finishes: straight into a pinned result, else through the ring's second half.
 * Chunk boundaries depend only on the shape and dtypes, so the results do not depend on timing.
 *
 * What is carried from chunk to chunk (a piece's partial, a scan's carry element, a running row) is held in the
 * work dtype (job.h): the accumulator the kernels use for the result dtype, float32 for float16 and bfloat16 sums,
 * products and their scans (issue 36: a float16 partial above 65504 was inf, and inf + -inf nan), the result
 * dtype itself otherwise (integers wrap exactly; min and max pick an element).  Each result the caller sees is
 * rounded to the result dtype once, as on the device: the combine of a row's partials, a slab's result row and a
 * scan chunk's results are cast from the work dtype where they are made.  A float16 or bfloat16 result may still
 * differ from the same data's on the device by the association of its float32 sum: a streamed row is summed
 * piece by piece (a scan's prefix carried piece by piece), the device array in its own tiles, and the float32
 * roundings differ (well within gpureduce.testing.error_bound); exactly representable float32 partial sums
 * (integers below 2^24, say) give exactly the device's result, as integer, min and max results always do.
 *
 * One stream carries everything in order (upload, kernel, download of chunk k, then chunk k + 1); the overlap is
 * between the CPU's copies into the ring and the device's copies and kernels.
 */
#include "job.h"

#include <string.h>

#define GR_STREAM_FROM GR_PINNED_SMALL    /* host inputs with more bytes than this stream */
#define GR_STREAM_ALIGN ((size_t)256)
#define GR_SIGNAL_EVERY_CHUNKS 32         /* look for Ctrl-C every 32 chunks (256 MiB) */
#define GR_STREAM_STRIPS 8                /* a wide row's strip: 1/8 of a chunk, so 7 rows and the carry per chunk */

static size_t
align_up(size_t x)
{
    return (x + GR_STREAM_ALIGN - 1) / GR_STREAM_ALIGN * GR_STREAM_ALIGN;
}

/* The dtype streamed partials, carries and running rows are held in (job.h: work_dtype): float32 for float16 and
 * bfloat16 results of what rounds as it goes, sums and products and their scans (nancumsum, nancumprod and
 * logcumsumexp too), whose kernels accumulate in float32 (cuda/primitives/types.cuh: accumulator).  min and max
 * (cummin, cummax) pick one of the elements, exact in the result dtype, whose kernels are the only ones; the other
 * operators stream in whole rows only (combines()), nothing carried; every other result dtype is its own
 * accumulator (integers wrap exactly). */
static gr_dtype
work_dtype_of(const gr_job *j)
{
    const gr_dtype out = j->a.out_dtype;
    const gr_op op = j->a.op;
    const gr_dtype wide = gr_dtype_accumulate_as(out);
    if (wide == out) return out;
    const int scanned_only = op == GR_OP_NANSUM || op == GR_OP_NANPROD || op == GR_OP_LOGSUMEXP;
    const int rounds = op == GR_OP_SUM || op == GR_OP_PROD || (j->kind == GR_KIND_SCAN && scanned_only);
    return rounds ? wide : out;
}

/* A float16 or bfloat16 value (its bits) as float32: exact. */
static float
half_as_float(gr_dtype dt, uint16_t h)
{
    uint32_t bits;
    float f;
    if (dt == GR_BFLOAT16) bits = (uint32_t)h << 16;
    else {
        const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
        if (exp == 0x1fu) bits = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
        else if (exp) bits = sign | ((exp + 112u) << 23) | (man << 13); /* rebiased: 127 - 15 */
        else { /* zero or subnormal: man * 2^-24 */
            f = (float)man * 0x1p-24f;
            memcpy(&bits, &f, sizeof(bits));
            bits |= sign;
        }
    }
    memcpy(&f, &bits, sizeof(f));
    return f;
}

/* Whether the variant's whole-array launcher runs (op, dt -> dt): how pieces are combined and carried. */
static int
flat_same_dtype(const gr_job *j, gr_dtype dt)
{
    return (j->info->dtypes & GR_DTBIT(dt)) && gr_default_result_dtype(j->info->kind, j->a.op, dt) == dt;
}

/* A row cut into pieces ends in GR_STREAM_TAIL_PIECES (4) pieces of a chunk / 2, / 4, / 8 and / 8: what cannot
 * overlap anything, the last piece's upload, kernel (and a scan's download), then moves 1 MiB instead of 8 (at
 * 2^24 float32 elements, about 0.13 ms of 2.4).  The head before that tail is cut into chunks, the first piece
 * taking the rest of the division.  The boundaries depend only on the row's length. */
static void
piece_of(const gr_streaming *st, int64_t p, int64_t *at, int64_t *n)
{
    const int64_t c = st->chunk, head = st->len - c, heads = st->pieces - GR_STREAM_TAIL_PIECES;
    const int64_t first = head - (heads - 1) * c;
    if (p < heads) {
        *at = p == 0 ? 0 : first + (p - 1) * c;
        *n = p == 0 ? first : c;
        return;
    }
    int64_t t = p - heads, size = c / 2;
    *at = head;
    for (; t > 0; t--, size /= 2) *at += size;
    *n = p == st->pieces - 1 ? st->len - *at : size; /* the last two are both chunk / 8 */
}

/* Operators whose partial results combine into the whole's: a row cut into pieces, a column cut into slabs. */
static int
combines(const gr_job *j)
{
    const gr_op op = j->a.op;
    if (j->info->properties & GR_PROP_EXACT) return 0; /* rounded partials would make it inexact: uploaded whole */
    if (j->kind == GR_KIND_SCAN) return !j->a.exclusive;
    return op == GR_OP_SUM || op == GR_OP_PROD || op == GR_OP_MIN || op == GR_OP_MAX || op == GR_OP_ANY ||
           op == GR_OP_ALL;  /* (count_nonzero's partials are counts: summed, not counted) */
}

/* Rows of `len` contiguous elements, one after another from element (0, ..., 0), results likewise. */
static int
plan_rows(gr_job *j, int64_t chunk)
{
    gr_streaming *st = &j->streamed;
    const gr_segments *s = &j->s;
    const int64_t rows = s->count[0] * s->count[1], len = s->reduce_count;
    if (len > 1 && s->reduce_in_stride != 1) return 0;
    if (s->count[1] > 1 && s->in_stride[1] != len) return 0;
    if (s->count[0] > 1 && s->in_stride[0] != s->count[1] * len) return 0;
    const int64_t res_row = j->kind == GR_KIND_REDUCE ? 1 : len;
    if (j->kind == GR_KIND_SCAN && len > 1 && s->reduce_out_stride != 1) return 0;
    if (s->count[1] > 1 && s->out_stride[1] != res_row) return 0;
    if (s->count[0] > 1 && s->out_stride[0] != s->count[1] * res_row) return 0;
    if (len > chunk) { /* rows cut into pieces: only what combines piece by piece */
        if (!combines(j)) return 0;
        if (j->flat ? !flat_same_dtype(j, j->a.out_dtype) : !(j->info->properties & GR_PROP_AXES)) return 0;
        /* the flat launchers give their result dtype only, never the work dtype (no variant's flat kernels take
         * float16 or bfloat16, so this never refuses one) */
        if (j->flat && st->work_dtype != j->a.out_dtype) return 0;
        st->mode = GR_STREAM_PIECES;
        st->pieces = (len - 1) / chunk + GR_STREAM_TAIL_PIECES; /* the head's (len - chunk), then the tail's */
    }
    else {
        st->mode = GR_STREAM_ROWS;
        st->rows_per_chunk = chunk / len;
        st->pieces = 1;
        /* a reduction's results go home chunk by chunk too, each chunk's within a ring slot */
        const int64_t slot_results = (int64_t)(GR_RING_CHUNK_BYTES / gr_dtype_itemsize(j->a.out_dtype));
        if (j->kind == GR_KIND_REDUCE && st->rows_per_chunk > slot_results) st->rows_per_chunk = slot_results;
    }
    st->rows = rows;
    st->len = len;
    return 1;
}

/* `batches` blocks of `len` rows of `width` contiguous elements, reduced or scanned along the rows (a column
 * sum of a C-ordered matrix, say): chunks of whole rows, each block's running result carried from chunk to
 * chunk as one more row in front. */
static int
plan_slabs(gr_job *j, int64_t chunk)
{
    gr_streaming *st = &j->streamed;
    const gr_segments *s = &j->s;
    const int inner = s->in_stride[0] == 1 && s->count[0] > 1 ? 0 : 1, outer = 1 - inner;
    const int64_t width = s->count[inner], batches = s->count[outer], len = s->reduce_count;
    const int reduce = j->kind == GR_KIND_REDUCE, wide = width > chunk / 2;
    if (width < 2 || s->in_stride[inner] != 1 || s->reduce_in_stride != width) return 0;
    if (batches > 1 && s->in_stride[outer] != len * width) return 0;
    if (!combines(j) || !(j->info->properties & GR_PROP_AXES)) return 0;
    if (s->out_stride[inner] != 1 || (!reduce && s->reduce_out_stride != width)) return 0;
    if (batches > 1 && s->out_stride[outer] != (reduce ? width : len * width)) return 0;
    st->mode = GR_STREAM_SLABS;
    st->rows = batches;
    st->len = len;
    st->width = width;
    st->strip = wide ? chunk / GR_STREAM_STRIPS : width;
    st->rows_per_chunk = chunk / st->strip - 1; /* the carried row takes one */
    return 1;
}

void
gr_stream_plan(gr_job *j)
{
    gr_streaming *st = &j->streamed;
    const gr_segments *s = &j->s;
    memset(st, 0, sizeof(*st));
    /* streamed without a mask, out= or ranges alone (a segmented reduction's results are not one per row) */
    if (j->kind == GR_KIND_COPY || !j->in->is_host || j->mask || j->out || j->s.ranges) return;
    const gr_dtype out = j->a.out_dtype;
    st->work_dtype = work_dtype_of(j);
    st->initial = j->s.initial;
    if (st->initial && st->work_dtype != out) { /* (float16 or bfloat16 -> float32: the only such pair) */
        uint16_t h;
        memcpy(&h, j->s.initial, sizeof(h));
        const float f = half_as_float(out, h);
        memcpy(st->work_initial, &f, sizeof(f));
        st->initial = st->work_initial;
    }
    const size_t in_item = gr_dtype_itemsize(j->in->dtype), work_item = gr_dtype_itemsize(st->work_dtype);
    const int64_t segments = s->count[0] * s->count[1], len = s->reduce_count;
    if (segments <= 0 || len <= 0 || segments * len != j->in->size || (size_t)j->in->size * in_item <= GR_STREAM_FROM)
        return;
    if (j->res_size != (j->kind == GR_KIND_REDUCE ? segments : segments * len)) return;
    /* A chunk fills a ring slot on the way in, and for a scan (its result goes home chunk by chunk) on the way out.
     * A scan's chunk is also scanned into the work dtype, and so is (behind a carried row, or cast first) a chunk of
     * a reduction whose work dtype is not its result dtype: the widest of input and work dtype decides (the
     * result's is never wider than the work dtype's). */
    const int in_work = j->kind == GR_KIND_SCAN || st->work_dtype != out;
    const size_t widest = in_work && work_item > in_item ? work_item : in_item;
    st->chunk = (int64_t)(GR_RING_CHUNK_BYTES / widest);
    st->on = plan_rows(j, st->chunk) || plan_slabs(j, st->chunk);
    /* A scan's results, and an array of row results, never sit on the device whole. */
    st->downloads = st->on && (j->kind == GR_KIND_SCAN || (st->mode == GR_STREAM_ROWS && j->res_ndim > 0));
}

/* ---------------------------------------------------------------- launches */

/* One launch: `rows` segments of `len` elements, each a contiguous row, or (`columns`) each a column of a block
 * of `len` rows of `rows` contiguous elements, from in_dtype into out_dtype (the result's, or the work dtype). */
typedef struct {
    const void *in;
    gr_dtype in_dtype, out_dtype;
    void *out;
    int64_t rows, len;
    int columns;
    int flat;
    const void *initial;
    int exclusive;
} launch_shape;

static void
shape_args(const gr_job *j, const launch_shape *l, gr_args *a, gr_segments *s)
{
    *a = j->a;
    a->in = l->in;
    a->in_dtype = l->in_dtype;
    a->out_dtype = l->out_dtype;
    a->out = l->out;
    a->n = l->len;
    a->exclusive = l->exclusive;
    memset(s, 0, sizeof(*s));
    const int reduce = j->kind == GR_KIND_REDUCE;
    s->count[0] = 1;
    s->count[1] = l->rows;
    s->reduce_count = l->len;
    if (l->columns) {
        s->in_stride[1] = 1;
        s->reduce_in_stride = l->rows;
        s->out_stride[1] = 1;
        s->reduce_out_stride = reduce ? 0 : l->rows;
    }
    else {
        s->in_stride[1] = l->len;
        s->reduce_in_stride = 1;
        s->out_stride[1] = reduce ? 1 : l->len;
        s->reduce_out_stride = reduce ? 0 : 1;
    }
    s->initial = l->initial;
}

static gr_status
shape_workspace(const gr_job *j, const launch_shape *l, size_t *bytes, int *cuda_error)
{
    gr_args a;
    gr_segments s;
    shape_args(j, l, &a, &s);
    if (l->flat) return gr_workspace_size(&a, bytes, cuda_error);
    return j->kind == GR_KIND_REDUCE ? gr_reduce_segments_workspace(&a, &s, bytes, cuda_error)
                                     : gr_scan_segments_workspace(&a, &s, bytes, cuda_error);
}

static void
launch(gr_job *j, const launch_shape *l)
{
    gr_outcome *o = &j->outcome;
    if (!gr_outcome_ok(o)) return;
    gr_args a;
    gr_segments s;
    shape_args(j, l, &a, &s);
    if (l->flat) o->st = j->kind == GR_KIND_REDUCE ? gr_reduce(&a, &o->cuda_error) : gr_scan(&a, &o->cuda_error);
    else
        o->st = j->kind == GR_KIND_REDUCE ? gr_reduce_segments(&a, &s, &o->cuda_error)
                                          : gr_scan_segments(&a, &s, &o->cuda_error);
}

/* Every launch shape the job will use, for the workspace: chunks, pieces, carried pieces, combines.  Launches from
 * the input read its dtype (the work dtype where it is cast first) into the work dtype; ROWS into the result's. */
static int
for_each_shape(const gr_job *j, size_t *most, int *cuda_error, gr_status *status)
{
    const gr_streaming *st = &j->streamed;
    const gr_dtype in = j->in->dtype, out = j->a.out_dtype, work = st->work_dtype;
    const gr_dtype from = st->cast_in ? work : in; /* what a launch from the input reads */
    launch_shape shapes[GR_STREAM_TAIL_PIECES + 3];
    int n = 0;
    if (st->mode == GR_STREAM_SLABS) { /* first chunks from the input, later ones behind the carried row */
        const int64_t full = st->rows_per_chunk < st->len ? st->rows_per_chunk : st->len, last = st->len % full;
        for (int64_t w = st->strip, narrow = st->width % st->strip; w; w = narrow, narrow = 0) { /* strips */
            shapes[n++] = (launch_shape){.in_dtype = from, .out_dtype = work, .rows = w, .len = full, .columns = 1,
                                         .initial = st->initial};
            shapes[n++] = (launch_shape){.in_dtype = work, .out_dtype = work, .rows = w, .len = full + 1, .columns = 1};
            if (last)
                shapes[n++] =
                    (launch_shape){.in_dtype = work, .out_dtype = work, .rows = w, .len = last + 1, .columns = 1};
        }
    }
    else if (st->mode == GR_STREAM_ROWS) {
        const int64_t full = st->rows_per_chunk < st->rows ? st->rows_per_chunk : st->rows;
        shapes[n++] = (launch_shape){.in_dtype = in, .out_dtype = out, .rows = full, .len = st->len, .flat = j->flat};
        if (st->rows % full)
            shapes[n++] = (launch_shape){.in_dtype = in, .out_dtype = out, .rows = st->rows % full, .len = st->len};
    }
    else { /* each piece's length from the input (the first piece) or behind the carry, then the combine */
        for (int64_t p = 0, at, len; p < st->pieces; p++) {
            piece_of(st, p, &at, &len);
            if (p > 1 && p < st->pieces - GR_STREAM_TAIL_PIECES) continue; /* later head pieces: a chunk each */
            const int behind = j->kind == GR_KIND_SCAN && p > 0; /* a scan's later pieces follow the carry */
            shapes[n++] = (launch_shape){.in_dtype = behind ? work : from, .out_dtype = work, .rows = 1,
                                         .len = behind ? len + 1 : len, .flat = j->flat};
        }
        if (j->kind == GR_KIND_REDUCE)
            shapes[n++] = (launch_shape){.in_dtype = work, .out_dtype = work, .rows = 1, .len = st->pieces,
                                         .flat = j->flat, .initial = st->initial};
    }
    *most = GR_WORKSPACE_ZEROED_BYTES;
    for (int i = 0; i < n; i++) {
        size_t bytes = 0;
        shapes[i].exclusive = j->a.exclusive;
        if ((*status = shape_workspace(j, &shapes[i], &bytes, cuda_error)) != GR_OK) return -1;
        if (bytes > *most) *most = bytes;
    }
    return 0;
}

/* Whether a launch from the input must read a copy cast to the work dtype (st->cast_in).  Only where the work
 * dtype is neither the input's nor the result's (a float16 or bfloat16 sum into float32): the axis kernels of
 * auto widen float16 and bfloat16 into float32 sums and products themselves; CUB's kernels, and logcumsumexp's,
 * take their result dtype only.  Asked of the workspace query, which answers GR_ERR_UNSUPPORTED_DTYPE for an
 * (operator, input, result) no kernel of the variant runs. */
static gr_status
plan_cast_in(gr_job *j, int *cuda_error)
{
    gr_streaming *st = &j->streamed;
    st->cast_in = 0;
    if (st->mode == GR_STREAM_ROWS || j->in->dtype == st->work_dtype || j->a.out_dtype == st->work_dtype)
        return GR_OK; /* (a launch into the result dtype reads what the plan chose for it) */
    const launch_shape probe = {.in_dtype = j->in->dtype, .out_dtype = st->work_dtype, .rows = 1, .len = 1,
                                .columns = st->mode == GR_STREAM_SLABS, .exclusive = j->a.exclusive};
    size_t bytes = 0;
    const gr_status status = shape_workspace(j, &probe, &bytes, cuda_error);
    if (status == GR_ERR_UNSUPPORTED_DTYPE) st->cast_in = 1;
    return status == GR_ERR_UNSUPPORTED_DTYPE ? GR_OK : status;
}

int
gr_stream_reserve(PyObject *module, gr_job *j)
{
    gr_streaming *st = &j->streamed;
    const gr_dtype out = j->a.out_dtype, work = st->work_dtype;
    const size_t in_item = gr_dtype_itemsize(j->in->dtype), out_item = gr_dtype_itemsize(out);
    const size_t work_item = gr_dtype_itemsize(work);
    const int scan = j->kind == GR_KIND_SCAN, narrowed = work != out; /* results cast from the work dtype */
    size_t workspace;
    int cuda_error = 0;
    gr_status status = plan_cast_in(j, &cuda_error);
    if (status != GR_OK || for_each_shape(j, &workspace, &cuda_error, &status) < 0) {
        gr_raise_status(module, status, cuda_error, j->info->name);
        return -1;
    }
    if (gr_exec_reserve_workspace(module, j->ex, workspace) < 0) return -1;
    const size_t in_bytes = align_up((size_t)st->chunk * in_item);
    /* a chunk in the work dtype, one element (PIECES) or one row (SLABS) more for the carry */
    const size_t carried = align_up((size_t)(st->chunk + 1) * work_item);
    const size_t out_bytes = scan             ? carried
                             : st->downloads  ? align_up((size_t)st->rows_per_chunk * out_item)
                             : st->mode == GR_STREAM_SLABS && narrowed ? align_up((size_t)st->strip * work_item)
                                                                       : 0;
    const int carries =
        st->mode == GR_STREAM_SLABS || (st->mode == GR_STREAM_PIECES && scan) || st->cast_in;
    const size_t carry_bytes = carries ? carried : 0;
    const size_t partial_bytes = st->mode == GR_STREAM_PIECES && !scan
                                     ? align_up((size_t)(st->pieces + narrowed) * work_item)
                                     : 0;
    const size_t cast_bytes =
        scan && narrowed && st->mode != GR_STREAM_ROWS ? align_up((size_t)st->chunk * out_item) : 0;
    if (gr_exec_reserve_staging(module, j->ex, in_bytes + out_bytes + carry_bytes + partial_bytes + cast_bytes) < 0)
        return -1;
    if (gr_exec_reserve_transfer(module, j->ex, 0) < 0 || gr_exec_reserve_ring(module, j->ex) < 0) return -1;
    char *base = j->ex->staging;
    st->dev_in = base;
    st->dev_out = out_bytes ? base + in_bytes : NULL;
    st->dev_carry = carry_bytes ? base + in_bytes + out_bytes : NULL;
    st->partials = partial_bytes ? base + in_bytes + out_bytes + carry_bytes : NULL;
    st->dev_cast = cast_bytes ? base + in_bytes + out_bytes + carry_bytes + partial_bytes : NULL;
    return 0;
}

/* ---------------------------------------------------------------- the ring */

/* Ring slots [0, up) carry uploads; [up, GR_RING_CHUNKS) downloads that land in pageable memory, each copied
 * out when its slot is needed again or at the end. */
typedef struct {
    gr_job *j;
    int up, ups, downs;
    char *pending_dst[GR_RING_CHUNKS]; /* a fetched slot's rows, and where they go */
    size_t pending_rows[GR_RING_CHUNKS], pending_row_bytes[GR_RING_CHUNKS], pending_pitch[GR_RING_CHUNKS];
    long chunks; /* since the last look for Ctrl-C */
} ring;

static void
keep(ring *r, cudaError_t err, const char *stage)
{
    gr_outcome_keep(&r->j->outcome, err, stage);
}

/* `rows` rows of `row_bytes`, `pitch` bytes apart at host `src`, packed at device `dev` */
static void
upload_rows(ring *r, void *dev, const char *src, int64_t rows, size_t row_bytes, size_t pitch)
{
    if (!gr_outcome_ok(&r->j->outcome)) return;
    keep(r, gr_ring_put_rows(r->j->ex, r->ups++ % r->up, dev, src, (size_t)rows, row_bytes, pitch, r->j->stream),
         "copying the input to the device");
}

static void
upload(ring *r, void *dev, const char *src, size_t bytes)
{
    upload_rows(r, dev, src, 1, bytes, bytes);
}

static void
copy_out(ring *r, int b)
{
    if (!r->pending_dst[b]) return;
    keep(r, gr_ring_take_rows(r->j->ex, b, r->pending_dst[b], r->pending_rows[b], r->pending_row_bytes[b],
                              r->pending_pitch[b]),
         "copying the result to the host");
    r->pending_dst[b] = NULL;
}

/* `rows` rows of `row_bytes` packed at device `dev`, to host rows `pitch` bytes apart at `dst` */
static void
download_rows(ring *r, char *dst, const void *dev, int64_t rows, size_t row_bytes, size_t pitch)
{
    gr_job *j = r->j;
    if (!gr_outcome_ok(&j->outcome)) return;
    if (j->host_dst_pinned) {
        keep(r,
             cudaMemcpy2DAsync(dst, pitch, dev, row_bytes, row_bytes, (size_t)rows, cudaMemcpyDeviceToHost, j->stream),
             "copying the result to the host");
        return;
    }
    const int b = r->up + r->downs++ % (GR_RING_CHUNKS - r->up);
    copy_out(r, b);
    const cudaError_t err = gr_ring_fetch(j->ex, b, dev, (size_t)rows * row_bytes, j->stream);
    if (err == cudaSuccess) {
        r->pending_dst[b] = dst;
        r->pending_rows[b] = (size_t)rows;
        r->pending_row_bytes[b] = row_bytes;
        r->pending_pitch[b] = pitch;
    }
    keep(r, err, "copying the result to the host");
}

static void
download(ring *r, char *dst, const void *dev, size_t bytes)
{
    download_rows(r, dst, dev, 1, bytes, bytes);
}

/* After each chunk: 0 to go on; 1 after a failure or a Ctrl-C (j->interrupted). */
static int
chunk_done(ring *r)
{
    gr_job *j = r->j;
    if (!gr_outcome_ok(&j->outcome)) return 1;
    if (++r->chunks >= GR_SIGNAL_EVERY_CHUNKS && j->gil) {
        r->chunks = 0;
        if (gr_job_signal_raised(j)) j->interrupted = 1;
    }
    return j->interrupted;
}

/* ---------------------------------------------------------------- the loops */

/* `n` elements at device `src` cast from one dtype to another at device `dst` (NumPy's casts: float32 to float16
 * or bfloat16 rounds to nearest even, as the kernels' own results do). */
static void
cast(ring *r, gr_dtype from, gr_dtype to, int64_t n, const void *src, void *dst)
{
    gr_outcome *o = &r->j->outcome;
    const int64_t one = 1;
    if (gr_outcome_ok(o))
        o->st = gr_copy_strided(from, to, 1, &n, &one, &one, src, dst, r->j->a.sm_count, r->j->stream, &o->cuda_error);
}

/* The chunk just uploaded to dev_in (`elements` of the input dtype) as a launch from the input reads it into the
 * work dtype: dev_in itself, or (st->cast_in) a copy cast to the work dtype in dev_carry after its first `skip`
 * elements, where a chunk behind the carry goes.  *dt: the dtype read. */
static const void *
from_input(ring *r, int64_t elements, int64_t skip, gr_dtype *dt)
{
    const gr_job *j = r->j;
    const gr_streaming *st = &j->streamed;
    if (!st->cast_in) {
        *dt = j->in->dtype;
        return st->dev_in;
    }
    char *to = (char *)st->dev_carry + (size_t)skip * gr_dtype_itemsize(st->work_dtype);
    cast(r, j->in->dtype, st->work_dtype, elements, st->dev_in, to);
    *dt = st->work_dtype;
    return to;
}

/* A chunk of `rows` rows of `width` elements at host `src` (rows `pitch` bytes apart), reduced or scanned behind
 * the running result so far (`running`, one row of the work dtype on the device): the running row and the chunk,
 * cast to the work dtype on the device where the input's differs, go to dev_carry as [running row, chunk rows],
 * and the launch over those rows + 1 writes `out` in the work dtype.  A piece of a long row is the case `width` 1. */
static void
run_behind_carry(ring *r, const void *running, const char *src, int64_t rows, int64_t width, size_t pitch, void *out,
                 int flat)
{
    gr_job *j = r->j;
    const gr_streaming *st = &j->streamed;
    const gr_dtype in_dt = j->in->dtype, work = st->work_dtype;
    const size_t in_item = gr_dtype_itemsize(in_dt), work_item = gr_dtype_itemsize(work);
    char *carry = st->dev_carry, *behind = carry + (size_t)width * work_item;
    keep(r, cudaMemcpyAsync(carry, running, (size_t)width * work_item, cudaMemcpyDeviceToDevice, j->stream),
         "carrying a result across chunks");
    if (in_dt == work) upload_rows(r, behind, src, rows, (size_t)width * in_item, pitch);
    else {
        upload_rows(r, st->dev_in, src, rows, (size_t)width * in_item, pitch);
        cast(r, in_dt, work, rows * width, st->dev_in, behind);
    }
    const launch_shape l = {.in = carry, .in_dtype = work, .out_dtype = work, .out = out, .rows = width,
                            .len = rows + 1, .columns = 1, .flat = flat};
    launch(j, &l);
}

/* Whole rows per chunk, each reduced or scanned in one launch straight into the result dtype: nothing is carried
 * from chunk to chunk, so the work dtype takes no part (the kernels accumulate in it themselves). */
static void
stream_rows(ring *r)
{
    gr_job *j = r->j;
    const gr_streaming *st = &j->streamed;
    const size_t in_row = (size_t)st->len * gr_dtype_itemsize(j->in->dtype);
    const size_t out_item = gr_dtype_itemsize(j->a.out_dtype);
    const size_t out_row = j->kind == GR_KIND_REDUCE ? out_item : (size_t)st->len * out_item;
    for (int64_t r0 = 0; r0 < st->rows; r0 += st->rows_per_chunk) {
        const int64_t k = st->rows - r0 < st->rows_per_chunk ? st->rows - r0 : st->rows_per_chunk;
        upload(r, st->dev_in, (const char *)j->in->ptr + (size_t)r0 * in_row, (size_t)k * in_row);
        void *out = st->downloads ? st->dev_out : j->a.out; /* a single result: the scalar's slot */
        const launch_shape l = {.in = st->dev_in, .in_dtype = j->in->dtype, .out_dtype = j->a.out_dtype, .out = out,
                                .rows = k, .len = st->len, .flat = j->flat && k == 1, .initial = j->s.initial,
                                .exclusive = j->a.exclusive};
        launch(j, &l);
        if (st->downloads) download(r, (char *)j->host_dst + (size_t)r0 * out_row, st->dev_out, k * out_row);
        if (chunk_done(r)) return;
    }
}

/* A reduction's pieces each give a partial in the work dtype, reduced in order into the row's result (then cast to
 * the result dtype where that is another); a scan's pieces are scanned into the work dtype behind the carry, the
 * last result of the piece before, and each piece's results are cast to the result dtype on their way home. */
static void
stream_pieces(ring *r)
{
    gr_job *j = r->j;
    const gr_streaming *st = &j->streamed;
    const gr_dtype in_dt = j->in->dtype, out_dt = j->a.out_dtype, work = st->work_dtype;
    const size_t in_item = gr_dtype_itemsize(in_dt), out_item = gr_dtype_itemsize(out_dt);
    const size_t work_item = gr_dtype_itemsize(work);
    const int narrowed = work != out_dt;
    char *dev_out = st->dev_out, *partials = st->partials;
    for (int64_t row = 0; row < st->rows; row++) {
        const char *src = (const char *)j->in->ptr + (size_t)(row * st->len) * in_item;
        int64_t before = 0; /* length of the previous piece */
        for (int64_t p = 0, at, n; p < st->pieces; p++) {
            piece_of(st, p, &at, &n);
            if (j->kind == GR_KIND_REDUCE) {
                upload(r, st->dev_in, src + (size_t)at * in_item, (size_t)n * in_item);
                gr_dtype dt;
                const void *in = from_input(r, n, 0, &dt);
                const launch_shape l = {.in = in, .in_dtype = dt, .out_dtype = work,
                                        .out = partials + (size_t)p * work_item, .rows = 1, .len = n, .flat = j->flat};
                launch(j, &l);
            }
            else if (p == 0) { /* no carry: straight from the input */
                upload(r, st->dev_in, src, (size_t)n * in_item);
                gr_dtype dt;
                const void *in = from_input(r, n, 1, &dt);
                const launch_shape l = {.in = in, .in_dtype = dt, .out_dtype = work, .out = dev_out + work_item,
                                        .rows = 1, .len = n, .flat = j->flat};
                launch(j, &l);
            }
            else /* scanned behind the last result of the piece before; its output after the carry is the piece's */
                run_behind_carry(r, dev_out + (size_t)before * work_item, src + (size_t)at * in_item, n, 1, in_item,
                                 dev_out, j->flat);
            if (j->kind == GR_KIND_SCAN) { /* the piece's results, each rounded to the result dtype once */
                const void *results = dev_out + work_item;
                if (narrowed) {
                    cast(r, work, out_dt, n, results, st->dev_cast);
                    results = st->dev_cast;
                }
                download(r, (char *)j->host_dst + (size_t)(row * st->len + at) * out_item, results,
                         (size_t)n * out_item);
            }
            before = n;
            if (chunk_done(r)) return;
        }
        if (j->kind == GR_KIND_REDUCE) { /* the row's partials, in order, into its result */
            void *out = j->rk == RESULT_SCALAR ? j->a.out : (char *)j->device_result + (size_t)row * out_item;
            void *combined = narrowed ? partials + (size_t)st->pieces * work_item : out;
            const launch_shape l = {.in = partials, .in_dtype = work, .out_dtype = work, .out = combined, .rows = 1,
                                    .len = st->pieces, .flat = j->flat, .initial = st->initial};
            launch(j, &l);
            if (narrowed) cast(r, work, out_dt, 1, combined, out); /* rounded to the result dtype once */
        }
    }
}

/* Each block's running result (a reduction's row, or a scan's last row of results) is carried in the work dtype
 * from chunk to chunk; a reduction's is cast into the block's result row after the strip's last chunk, a scan's
 * chunk results on their way home. */
static void
stream_slabs(ring *r)
{
    gr_job *j = r->j;
    const gr_streaming *st = &j->streamed;
    const gr_dtype in_dt = j->in->dtype, out_dt = j->a.out_dtype, work = st->work_dtype;
    const size_t in_item = gr_dtype_itemsize(in_dt), out_item = gr_dtype_itemsize(out_dt);
    const size_t work_item = gr_dtype_itemsize(work);
    const size_t in_row = (size_t)st->width * in_item, out_row = (size_t)st->width * out_item;
    const int reduce = j->kind == GR_KIND_REDUCE, narrowed = work != out_dt;
    char *dev_out = st->dev_out;
    for (int64_t b = 0; b < st->rows; b++)
        for (int64_t s0 = 0; s0 < st->width; s0 += st->strip) { /* one strip of columns (all of them if narrow) */
            const int64_t w = st->width - s0 < st->strip ? st->width - s0 : st->strip;
            const size_t work_row = (size_t)w * work_item; /* a row of the strip's running result on the device */
            const char *src = (const char *)j->in->ptr + (size_t)(b * st->len) * in_row + (size_t)s0 * in_item;
            /* a reduction's running result is the strip of the block's result row (or, where the result dtype is
             * not the work dtype, a row in dev_out cast into it at the end); a scan's, the last row of dev_out */
            char *strip_result = reduce ? (char *)j->device_result + (size_t)b * out_row + (size_t)s0 * out_item : NULL;
            char *result = reduce && !narrowed ? strip_result : dev_out;
            int64_t last = 0; /* scans: which row of dev_out that is */
            for (int64_t r0 = 0; r0 < st->len; r0 += st->rows_per_chunk) {
                const int64_t n = st->len - r0 < st->rows_per_chunk ? st->len - r0 : st->rows_per_chunk;
                if (r0 == 0) { /* straight from the input; initial= folded in here, once */
                    upload_rows(r, st->dev_in, src, n, (size_t)w * in_item, in_row);
                    gr_dtype dt;
                    const void *in = from_input(r, n * w, w, &dt);
                    const launch_shape l = {.in = in, .in_dtype = dt, .out_dtype = work, .out = result, .rows = w,
                                            .len = n, .columns = 1, .initial = st->initial};
                    launch(j, &l);
                    last = n - 1;
                }
                else { /* behind the running result */
                    const void *running = reduce ? result : dev_out + (size_t)last * work_row;
                    run_behind_carry(r, running, src + (size_t)r0 * in_row, n, w, in_row, result, 0);
                    last = n;
                }
                if (!reduce) { /* the chunk's rows of the result (the last n rows of dev_out) into the strip's */
                    const void *rows = dev_out + (size_t)(last + 1 - n) * work_row;
                    if (narrowed) { /* each rounded to the result dtype once */
                        cast(r, work, out_dt, n * w, rows, st->dev_cast);
                        rows = st->dev_cast;
                    }
                    download_rows(r, (char *)j->host_dst + (size_t)(b * st->len + r0) * out_row + (size_t)s0 * out_item,
                                  rows, n, (size_t)w * out_item, out_row);
                }
                if (chunk_done(r)) return;
            }
            if (reduce && narrowed) cast(r, work, out_dt, w, result, strip_result); /* the strip's results, once */
        }
}

void
gr_stream_enqueue(gr_job *j)
{
    ring r = {.j = j};
    /* Downloads into pageable memory share the ring half and half; without them, uploads have it all. */
    r.up = j->streamed.downloads && !j->host_dst_pinned ? GR_RING_CHUNKS / 2 : GR_RING_CHUNKS;
    if (j->streamed.mode == GR_STREAM_ROWS) stream_rows(&r);
    else if (j->streamed.mode == GR_STREAM_PIECES) stream_pieces(&r);
    else stream_slabs(&r);
    for (int i = 0; i < GR_RING_CHUNKS - r.up && !j->interrupted; i++) /* the downloads still in the ring, in order */
        copy_out(&r, r.up + (r.downs + i) % (GR_RING_CHUNKS - r.up));
}
