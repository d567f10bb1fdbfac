/* plan.c -- _core.Plan: one call's device work as gpureduce/_planning/plan.py decided it, read once.
 *
 * Python builds a plan by keyword (kind, variant, op, result_dtype, a, second, mask, out, layout, shape,
 * parameter, initial, ranges, exclusive, launcher); this file parses it into a gr_plan (ext.h) and verifies what the
 * runner relies on: the variant runs the operator, the launcher fits the plan, operands sit where the operator
 * reads them, values are one result element.  Python chose everything, the launcher included (a classic variant
 * is refused while planning, with NumPy's words); C only verifies, so a wrong plan is a TypeError or ValueError
 * here, never a kernel reading the wrong memory.
 *
 * A plan without its input (a=None) is a template: the planner caches those per (operator, variant, input kind,
 * dtype, shape, strides) and gives each call its own copy with with_operands(), which verifies the operands
 * again.  The runner (run.c) and time_device (timing.c) take a plan whose input is there.
 */
#include "ext.h"

#include <limits.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    gr_plan p;
    PyObject *a, *second, *mask, *out; /* _core.Operand or None */
    PyObject *layout, *shape;          /* the tuples as given (the getters hand them back) */
    PyObject *parameter, *initial;     /* bytes or None */
    PyObject *ranges;                  /* (bounds Operand, form, algorithm, mean_length) or None, as given */
} PlanObject;

#define PLAN(o) ((PlanObject *)(o))

/* The order of a reduction's or scan's layout: gr_segments' fields as 12 ints (gpureduce/_planning/layout.py:
 * Segments.as_tuple writes them in this order; _core.SEGMENT_FIELDS). */
static const char *const kSegmentFields[] = {"c0", "c1", "is0", "is1", "ir", "os0", "os1", "or",
                                             "ms0", "ms1", "mr", "R"};
#define SEGMENT_FIELD_COUNT 12

static const char *const kLauncherNames[] = {"flat", "axis", "copy"};

/* ---------------------------------------------------------------- reading */

static int
read_ints(PyObject *t, int64_t *v, int max, int *count, const char *what)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) > max) {
        PyErr_Format(PyExc_TypeError, "Plan: %s must be a tuple of at most %d ints", what, max);
        return -1;
    }
    *count = (int)PyTuple_GET_SIZE(t);
    for (int i = 0; i < *count; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    return 0;
}

static int
read_segments(PyObject *t, gr_segments *s)
{
    int64_t v[SEGMENT_FIELD_COUNT];
    int n;
    if (read_ints(t, v, SEGMENT_FIELD_COUNT, &n, "layout") < 0) return -1;
    if (n != SEGMENT_FIELD_COUNT) {
        PyErr_SetString(PyExc_TypeError, "Plan: a reduction's or scan's layout is 12 ints, in the order of "
                                         "_core.SEGMENT_FIELDS");
        return -1;
    }
    *s = (gr_segments){
        .count = {v[0], v[1]},
        .in_stride = {v[2], v[3]},
        .reduce_in_stride = v[4],
        .out_stride = {v[5], v[6]},
        .reduce_out_stride = v[7],
        .mask_stride = {v[8], v[9]},
        .reduce_mask_stride = v[10],
        .reduce_count = v[11],
    };
    if (v[0] < 0 || v[1] < 0 || v[11] < 0) {
        PyErr_SetString(PyExc_ValueError, "Plan: segment counts must be non-negative");
        return -1;
    }
    return 0;
}

static int
read_copy_layout(PyObject *t, gr_plan *p)
{
    int n_in, n_out;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3) {
        PyErr_SetString(PyExc_TypeError, "Plan: a copy's layout is (shape, in_strides, out_strides)");
        return -1;
    }
    if (read_ints(PyTuple_GET_ITEM(t, 0), p->copy_shape, GR_COPY_MAX_NDIM, &p->copy_ndim, "the copy's shape") < 0 ||
        read_ints(PyTuple_GET_ITEM(t, 1), p->copy_in, GR_COPY_MAX_NDIM, &n_in, "the copy's input strides") < 0 ||
        read_ints(PyTuple_GET_ITEM(t, 2), p->copy_out, GR_COPY_MAX_NDIM, &n_out, "the copy's output strides") < 0)
        return -1;
    if (n_in != p->copy_ndim || n_out != p->copy_ndim) {
        PyErr_SetString(PyExc_ValueError, "Plan: the copy's shape and strides must have one entry per dimension");
        return -1;
    }
    return 0;
}

/* initial= or the operator's parameter: the bytes of one result value, or None. */
static int
read_value(PyObject *bytes, gr_dtype dtype, const char *what, gr_plan *p)
{
    if (bytes == Py_None) return 0;
    char *data;
    Py_ssize_t len;
    if (!PyBytes_Check(bytes)) {
        PyErr_Format(PyExc_TypeError, "Plan: %s must be bytes or None, not %.200s", what, Py_TYPE(bytes)->tp_name);
        return -1;
    }
    if (PyBytes_AsStringAndSize(bytes, &data, &len) < 0) return -1;
    if ((size_t)len != gr_dtype_itemsize(dtype)) {
        PyErr_Format(PyExc_ValueError, "Plan: %s must be the %zu bytes of one %s value, not %zd bytes", what,
                     gr_dtype_itemsize(dtype), gr_dtype_name(dtype), len);
        return -1;
    }
    memcpy(p->value, data, (size_t)len);
    p->has_value = 1;
    return 0;
}

/* ---------------------------------------------------------------- verifying */

/* The variant's flat kernel reads this plan: one dense segment, no mask, second operand or value, in the result
 * dtype NumPy picks (gpureduce/_planning/plan.py: launcher_for decides the same). */
static int
flat_fits(const gr_plan *p, const char **why)
{
    const gr_variant_info *v = p->info;
    const gr_segments *s = &p->s;
    *why = NULL;
    if (!(v->ops & GR_OPBIT(p->op))) *why = "the variant's flat kernels do not run the operator";
    else if (!(v->dtypes & GR_DTBIT(p->in->dtype))) *why = "the variant's flat kernels do not read the dtype";
    else if (p->mask || p->second || p->has_value) *why = "a mask, second operand or value needs the axis kernels";
    else if (s->count[0] * s->count[1] > 1) *why = "more than one segment";
    else if (p->out_dtype != gr_default_result_dtype(p->info->kind, p->op, p->in->dtype))
        *why = "the result dtype is not the one NumPy picks";
    else if (s->reduce_count > 1 && s->reduce_in_stride != 1) *why = "the input is not dense";
    else if (p->kind == GR_KIND_REDUCE && p->res_ndim != 0) *why = "a reduction's result is not one value";
    /* a classic variant writes its one value into a device out= (the caller's library's fresh result: in a CUDA
     * graph's capture, memory the graph does not own); an axis variant's whole-array call with out= runs its axis
     * kernels, as it always has */
    else if (p->kind == GR_KIND_REDUCE && p->out && (v->properties & GR_PROP_AXES))
        *why = "an axis variant writes out= through its axis kernels";
    else if (p->kind == GR_KIND_REDUCE && p->out && (p->out->dtype != p->out_dtype || p->out->size != 1))
        *why = "out= is not one element of the result dtype";
    else if (p->kind == GR_KIND_SCAN && s->reduce_count > 1 && s->reduce_out_stride != 1)
        *why = "the result is not dense";
    return *why == NULL;
}

/* ranges=(bounds, form, algorithm, mean_length, gaps, max_length[, stops]): a segmented reduction or scan (issue 40,
 * gr_ranges in cuda/abi/gpureduce.h), read into p->has_ranges, p->bounds, p->stops and p->ranges.  What the kernels
 * rely on is checked here, the operands' places included: bounds are read as `count` (or twice `count`) int64 in a
 * row, device stops given apart from the starts (read in place, not copied after them) as `count`, group ids'
 * notes of the ids out of range (written by the kernels) as 2; a reduction
 * writes one result element per (i0, i1, range), a scan one per input element.  The bounds' values are the
 * planner's to check (the kernels clip them, so no read or write leaves the arrays; a scan's ranges must be
 * disjoint).  0, or -1 with an exception. */
static int
check_ranges(PyObject *module, gr_plan *p, PlanObject *self)
{
    p->has_ranges = 0;
    p->bounds = p->stops = NULL;
    memset(&p->ranges, 0, sizeof(p->ranges));
    if (self->ranges == Py_None) return 0;
    PyObject *t = self->ranges;
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) < 6 || PyTuple_GET_SIZE(t) > 7) {
        if (PyTuple_Check(t))
            PyErr_Format(PyExc_TypeError, "Plan: ranges must be None or a tuple (bounds, form, algorithm, mean_length, "
                                          "gaps, max_length[, stops]), not a tuple of %zd items", PyTuple_GET_SIZE(t));
        else
            PyErr_Format(PyExc_TypeError, "Plan: ranges must be None or a tuple (bounds, form, algorithm, mean_length, "
                                          "gaps, max_length[, stops]), not %.200s", Py_TYPE(t)->tp_name);
        return -1;
    }
    static const char *const names[] = {"form", "algorithm", "mean_length", "gaps", "max_length"};
    int64_t v[5];
    for (int i = 0; i < 5; i++) {
        PyObject *item = PyTuple_GET_ITEM(t, i + 1);
        if (!PyLong_Check(item)) {
            PyErr_Format(PyExc_TypeError, "Plan: ranges' %s must be an int, not %.200s", names[i],
                         Py_TYPE(item)->tp_name);
            return -1;
        }
        v[i] = PyLong_AsLongLong(item);
        if (v[i] == -1 && PyErr_Occurred()) return -1;
    }
    const int64_t form = v[0], algorithm = v[1], mean_length = v[2], gaps = v[3], max_length = v[4];
    const int scan = p->kind == GR_KIND_SCAN;
    if ((p->kind != GR_KIND_REDUCE && !scan) || p->launcher != GR_LAUNCH_AXIS) {
        PyErr_SetString(PyExc_ValueError, "Plan: ranges are a reduction's or a scan's, run by the axis kernels (kind "
                                          "KIND_REDUCE or KIND_SCAN, launcher LAUNCH_AXIS)");
        return -1;
    }
    if (self->mask != Py_None || self->second != Py_None) {
        PyErr_SetString(PyExc_ValueError, "Plan: a reduction or scan over ranges takes no where= mask and no second "
                                          "operand");
        return -1;
    }
    if (gaps != 0 && gaps != 1) {
        PyErr_Format(PyExc_ValueError, "Plan: ranges' gaps must be 0 or 1, not %lld", (long long)gaps);
        return -1;
    }
    if (form != GR_RANGES_STARTS_STOPS && form != GR_RANGES_REDUCEAT && form != GR_RANGES_GROUP_IDS) {
        PyErr_Format(PyExc_ValueError, "Plan: ranges' form %lld is not RANGES_STARTS_STOPS, RANGES_REDUCEAT or "
                                       "RANGES_GROUP_IDS", (long long)form);
        return -1;
    }
    if (form == GR_RANGES_GROUP_IDS && scan) {
        PyErr_SetString(PyExc_ValueError, "Plan: RANGES_GROUP_IDS groups a reduction, not a scan");
        return -1;
    }
    if (algorithm < 0 || algorithm >= GR_RANGE_ALGORITHM_COUNT) {
        PyErr_Format(PyExc_ValueError, "Plan: ranges' algorithm %lld is not an index of range_algorithms (0 to %d)",
                     (long long)algorithm, GR_RANGE_ALGORITHM_COUNT - 1);
        return -1;
    }
    if (scan && algorithm == GR_RANGES_LANES) { /* abi/ranges.def: no scan_doc */
        PyErr_SetString(PyExc_ValueError, "Plan: the segmented scans do not take the ranges' algorithm lanes");
        return -1;
    }
    if (max_length < 0) {
        PyErr_Format(PyExc_ValueError, "Plan: ranges' max_length must be >= 0 (0: unknown), not %lld",
                     (long long)max_length);
        return -1;
    }
    if (mean_length < 0) {
        PyErr_Format(PyExc_ValueError, "Plan: ranges' mean_length must be >= 0 (0: the kernels estimate it), not %lld",
                     (long long)mean_length);
        return -1;
    }
    const gr_operand *b = gr_operand_of(module, PyTuple_GET_ITEM(t, 0), "the ranges' bounds");
    if (!b) return -1;
    if (b->dtype != GR_INT64) {
        PyErr_Format(PyExc_TypeError, "Plan: the ranges' bounds must be int64, not %s", gr_dtype_name(b->dtype));
        return -1;
    }
    if (b->ndim != 1) {
        PyErr_Format(PyExc_ValueError, "Plan: the ranges' bounds must be a 1-d array, not %d-d", b->ndim);
        return -1;
    }
    if (b->size > 1 && b->strides[0] != 1) { /* the kernels read bounds[k] at k */
        PyErr_Format(PyExc_ValueError, "Plan: the ranges' bounds must be contiguous (unit stride), not of stride %lld "
                                       "elements", (long long)b->strides[0]);
        return -1;
    }
    const gr_operand *stops = NULL;
    if (PyTuple_GET_SIZE(t) == 7 && PyTuple_GET_ITEM(t, 6) != Py_None) {
        if (!(stops = gr_operand_of(module, PyTuple_GET_ITEM(t, 6), "the ranges' stops"))) return -1;
        /* RANGES_GROUP_IDS: the two notes of the ids out of range, written by the kernels (gr_ranges.stops) */
        const int64_t want = form == GR_RANGES_GROUP_IDS ? 2 : b->size;
        if (form == GR_RANGES_REDUCEAT || b->is_host || stops->is_host || stops->dtype != GR_INT64 ||
            stops->ndim != 1 || stops->size != want || (stops->size > 1 && stops->strides[0] != 1)) {
            PyErr_SetString(PyExc_ValueError,
                            "Plan: the ranges' 7th item is RANGES_STARTS_STOPS' stops apart from their starts (a "
                            "contiguous 1-d int64 device array as long as the starts) or RANGES_GROUP_IDS' notes of "
                            "the ids out of range (two contiguous int64 on the device, zero), with device bounds");
            return -1;
        }
    }
    if (form == GR_RANGES_STARTS_STOPS && !stops && b->size % 2) {
        PyErr_Format(PyExc_ValueError, "Plan: RANGES_STARTS_STOPS bounds are the starts, then as many stops: an even "
                                       "number, not %lld", (long long)b->size);
        return -1;
    }
    if (form == GR_RANGES_GROUP_IDS && b->size != p->s.reduce_count) {
        PyErr_Format(PyExc_ValueError, "Plan: RANGES_GROUP_IDS bounds are one id per element of the reduced axis "
                                       "(%lld), not %lld", (long long)p->s.reduce_count, (long long)b->size);
        return -1;
    }
    /* group ids: the groups are the result's along the reduced axis (what the shape leaves after the kept ones) */
    const int64_t kept = p->s.count[0] * p->s.count[1];
    const int64_t count = form == GR_RANGES_STARTS_STOPS ? (stops ? b->size : b->size / 2)
                          : form == GR_RANGES_REDUCEAT   ? b->size
                          : kept > 0                     ? p->res_size / kept
                                                         : 0;
    /* a new result is made of plan.shape, and the kernels write every element: one per (i0, i1, range) of a
     * reduction, one per input element of a scan (gaps: the identity first where no range covers it) */
    const int64_t writes = p->s.count[0] * p->s.count[1] * (scan ? p->s.reduce_count : count);
    if (p->res_size != writes) {
        PyErr_Format(PyExc_ValueError, "Plan: a %s over %lld ranges of %lld x %lld segments writes %lld values, but "
                                       "shape has %lld", scan ? "scan" : "reduction", (long long)count,
                     (long long)p->s.count[0], (long long)p->s.count[1], (long long)writes, (long long)p->res_size);
        return -1;
    }
    p->has_ranges = 1;
    p->bounds = b;
    p->stops = stops;
    p->ranges = (gr_ranges){.bounds = NULL, .stops = NULL, .count = count, .form = (int)form,
                            .algorithm = (int)algorithm, .mean_length = mean_length, .gaps = scan && gaps,
                            .max_length = max_length};
    return 0;
}

/* What needs the operands: where they sit and what the launcher reads.  0, or -1 with an exception. */
static int
check_operands(PyObject *module, gr_plan *p, PlanObject *self)
{
    p->in = p->second = p->mask = p->out = NULL;
    if (check_ranges(module, p, self) < 0) return -1; /* a template's too: it keeps them (with_operands) */
    if (self->a == Py_None) return 0; /* a template */
    if (!(p->in = gr_operand_of(module, self->a, "the input"))) return -1;
    if (p->bounds && p->in->is_host && !p->bounds->is_host) { /* a host call stages its host operands, no others */
        PyErr_SetString(PyExc_ValueError, "Plan: the ranges' bounds must be a host (NumPy) array when the input is one");
        return -1;
    }
    if (self->second != Py_None && !(p->second = gr_operand_of(module, self->second, "the second operand")))
        return -1;
    if (self->mask != Py_None && !(p->mask = gr_operand_of(module, self->mask, "where="))) return -1;
    if (self->out != Py_None && !(p->out = gr_operand_of(module, self->out, "out="))) return -1;
    if (p->out && p->out->is_host) {
        PyErr_SetString(PyExc_TypeError, "Plan: out must be a device array (a host out= is filled in Python)");
        return -1;
    }
    if (p->kind == GR_KIND_COPY) {
        if (p->second || p->mask) {
            PyErr_SetString(PyExc_ValueError, "Plan: a copy reads one operand");
            return -1;
        }
        return 0;
    }
    const gr_operands operands = gr_op_operands(p->op);
    if (p->second ? operands == GR_OPERANDS_ONE || p->second->dtype != p->in->dtype : operands == GR_OPERANDS_TWO) {
        PyErr_Format(PyExc_ValueError, "Plan: %s %s", gr_op_name(p->op),
                     operands == GR_OPERANDS_ONE ? "reads no second operand"
                                                 : "needs its second operand in the input's dtype");
        return -1;
    }
    if (p->second && p->mask) { /* the second is read at the mask's strides (gr_segments.second) */
        PyErr_Format(PyExc_ValueError, "Plan: %s reads its second operand at the mask's strides: it takes no where=",
                     gr_op_name(p->op));
        return -1;
    }
    const char *why;
    if (p->launcher == GR_LAUNCH_FLAT && !flat_fits(p, &why)) {
        PyErr_Format(PyExc_ValueError, "Plan: launcher 'flat' does not fit variant '%s' here: %s", p->info->name, why);
        return -1;
    }
    return 0;
}

/* What needs no operand: the kind, variant, launcher, layout and values agree. */
static int
check_fields(gr_plan *p, int kind, int variant, int op, int out_dtype, int launcher)
{
    if (kind != GR_KIND_REDUCE && kind != GR_KIND_SCAN && kind != GR_KIND_COPY) {
        PyErr_Format(PyExc_ValueError, "Plan: kind %d is not KIND_REDUCE, KIND_SCAN or KIND_COPY", kind);
        return -1;
    }
    if (out_dtype < 0 || out_dtype >= GR_DTYPE_COUNT) {
        PyErr_Format(PyExc_ValueError, "Plan: result_dtype %d is not a dtype code", out_dtype);
        return -1;
    }
    if (launcher < GR_LAUNCH_FLAT || launcher > GR_LAUNCH_COPY || (launcher == GR_LAUNCH_COPY) != (kind == GR_KIND_COPY)) {
        PyErr_Format(PyExc_ValueError, "Plan: launcher %d: LAUNCH_COPY for a copy, LAUNCH_FLAT or LAUNCH_AXIS otherwise",
                     launcher);
        return -1;
    }
    p->kind = kind;
    p->launcher = (gr_launcher)launcher;
    p->op = (gr_op)op;
    p->out_dtype = (gr_dtype)out_dtype;
    if (kind == GR_KIND_COPY) return 0;
    if (!(p->info = gr_checked_variant(variant, op, (gr_kind)kind))) return -1;
    p->variant = (gr_variant)variant;
    /* "exact" runs its floating sums and means along axes too (cuda/axis/reduce_segments_exact.cu) */
    if (launcher == GR_LAUNCH_AXIS && !(p->info->properties & (GR_PROP_AXES | GR_PROP_EXACT))) {
        PyErr_Format(PyExc_ValueError, "Plan: variant '%s' has no axis kernels (launcher 'axis'); it runs whole arrays",
                     p->info->name);
        return -1;
    }
    if (p->exclusive && kind != GR_KIND_SCAN) {
        PyErr_SetString(PyExc_ValueError, "Plan: exclusive is a scan's");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- the type */

static PlanObject *
plan_alloc(PyTypeObject *type)
{
    PlanObject *self = (PlanObject *)type->tp_alloc(type, 0);
    if (!self) return NULL;
    self->a = Py_NewRef(Py_None);
    self->second = Py_NewRef(Py_None);
    self->mask = Py_NewRef(Py_None);
    self->out = Py_NewRef(Py_None);
    self->layout = Py_NewRef(Py_None);
    self->shape = Py_NewRef(Py_None);
    self->parameter = Py_NewRef(Py_None);
    self->initial = Py_NewRef(Py_None);
    self->ranges = Py_NewRef(Py_None);
    return self;
}

/* The keywords a Plan is built with, in the order of Plan()'s signature. */
enum {
    F_KIND, F_LAUNCHER, F_VARIANT, F_OP, F_RESULT_DTYPE, F_A, F_SECOND, F_MASK, F_OUT, F_LAYOUT, F_SHAPE, F_PARAMETER,
    F_INITIAL, F_RANGES, F_EXCLUSIVE, F_COUNT
};
static const char *const kFieldNames[F_COUNT] = {"kind", "launcher", "variant", "op", "result_dtype", "a", "second",
                                                 "mask", "out", "layout", "shape", "parameter", "initial",
                                                 "ranges", "exclusive"};
static PyObject *g_field_names[F_COUNT]; /* interned once (gr_plan_type_new): a call's keywords are these */

/* Which field the keyword `name` is, or -1: by identity first (the planner's keywords are interned), else by text. */
static int
field_index(PyObject *name)
{
    for (int i = 0; i < F_COUNT; i++)
        if (name == g_field_names[i]) return i;
    for (int i = 0; i < F_COUNT; i++)
        if (PyUnicode_Check(name) && PyUnicode_CompareWithASCIIString(name, kFieldNames[i]) == 0) return i;
    return -1;
}

static int
int_field(PyObject *const *values, int field, int fallback, int *out)
{
    if (!values[field]) {
        if (fallback == INT_MIN) {
            PyErr_Format(PyExc_TypeError, "Plan() needs %s=", kFieldNames[field]);
            return -1;
        }
        *out = fallback;
        return 0;
    }
    const long v = PyLong_AsLong(values[field]);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v < INT_MIN || v > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "Plan: %s=%ld is out of range", kFieldNames[field], v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* A new plan of the keyword values (NULL: not given). */
static PyObject *
plan_build(PyTypeObject *type, PyObject *const *values)
{
    PyObject *module = PyType_GetModule(type);
    if (!module) return NULL;
    int kind, launcher, variant, op, out_dtype;
    if (int_field(values, F_KIND, INT_MIN, &kind) < 0 || int_field(values, F_LAUNCHER, INT_MIN, &launcher) < 0 ||
        int_field(values, F_VARIANT, kind == GR_KIND_COPY ? -1 : INT_MIN, &variant) < 0 ||
        int_field(values, F_OP, 0, &op) < 0 || int_field(values, F_RESULT_DTYPE, INT_MIN, &out_dtype) < 0)
        return NULL;
    if (!values[F_LAYOUT] || !values[F_SHAPE]) {
        PyErr_SetString(PyExc_TypeError, "Plan() needs layout= and shape=");
        return NULL;
    }
    const int exclusive = values[F_EXCLUSIVE] ? PyObject_IsTrue(values[F_EXCLUSIVE]) : 0;
    if (exclusive < 0) return NULL;
    PlanObject *self = plan_alloc(type);
    if (!self) return NULL;
    gr_plan *p = &self->p;
    p->exclusive = exclusive;
    PyObject **slots[] = {[F_A] = &self->a, [F_SECOND] = &self->second, [F_MASK] = &self->mask,
                          [F_OUT] = &self->out, [F_LAYOUT] = &self->layout, [F_SHAPE] = &self->shape,
                          [F_PARAMETER] = &self->parameter, [F_INITIAL] = &self->initial,
                          [F_RANGES] = &self->ranges};
    for (int f = F_A; f <= F_RANGES; f++)
        if (values[f]) Py_SETREF(*slots[f], Py_NewRef(values[f]));
    PyObject *layout = self->layout, *parameter = self->parameter, *initial = self->initial;
    if (check_fields(p, kind, variant, op, out_dtype, launcher) < 0) goto fail;
    if (read_ints(self->shape, p->res_shape, GR_MAX_NDIM, &p->res_ndim, "shape") < 0) goto fail;
    p->res_size = 1;
    for (int i = 0; i < p->res_ndim; i++) p->res_size *= p->res_shape[i];
    if (kind == GR_KIND_COPY) {
        if (read_copy_layout(layout, p) < 0) goto fail;
        if (parameter != Py_None || initial != Py_None) {
            PyErr_SetString(PyExc_ValueError, "Plan: a copy takes no parameter or initial value");
            goto fail;
        }
    }
    else {
        if (read_segments(layout, &p->s) < 0) goto fail;
        /* the operator's parameter (var's ddof, vector_norm's ord, ...) and initial= ride in one kernel slot
         * (gr_segments.initial): an operator has the one or the other */
        const int has_parameter = gr_op_has_parameter(p->op);
        if ((has_parameter ? initial : parameter) != Py_None) {
            PyErr_Format(PyExc_ValueError, "Plan: %s takes %s", gr_op_name(p->op),
                         has_parameter ? "a parameter, not initial=" : "initial=, not a parameter");
            goto fail;
        }
        if (read_value(has_parameter ? parameter : initial, p->out_dtype, has_parameter ? "parameter" : "initial",
                       p) < 0)
            goto fail;
    }
    if (check_operands(module, p, self) < 0) goto fail;
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static int
take_keyword(PyObject *name, PyObject *value, PyObject **values)
{
    const int f = field_index(name);
    if (f < 0) {
        PyErr_Format(PyExc_TypeError, "Plan() got an unexpected keyword argument '%S'", name);
        return -1;
    }
    values[f] = value;
    return 0;
}

/* Plan(**fields): the planner's call, by vectorcall (a keyword parser built for speed: it runs once per call). */
static PyObject *
Plan_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    PyObject *values[F_COUNT] = {NULL};
    if (PyVectorcall_NARGS(nargsf)) {
        PyErr_SetString(PyExc_TypeError, "Plan() takes keyword arguments only");
        return NULL;
    }
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++)
        if (take_keyword(PyTuple_GET_ITEM(kwnames, k), args[k], values) < 0) return NULL;
    return plan_build((PyTypeObject *)type, values);
}

static PyObject *
Plan_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    PyObject *values[F_COUNT] = {NULL}, *name, *value;
    Py_ssize_t pos = 0;
    if (PyTuple_GET_SIZE(args)) {
        PyErr_SetString(PyExc_TypeError, "Plan() takes keyword arguments only");
        return NULL;
    }
    while (kwargs && PyDict_Next(kwargs, &pos, &name, &value))
        if (take_keyword(name, value, values) < 0) return NULL;
    return plan_build(type, values);
}

/* with_operands(a, second=None, mask=None, out=None) -> a copy of the plan reading these operands. */
static PyObject *
Plan_with_operands(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    static const char *const names[] = {"a", "second", "mask", "out"};
    PyObject *given[4] = {Py_None, Py_None, Py_None, Py_None};
    if (nargs > 4) {
        PyErr_SetString(PyExc_TypeError, "with_operands() takes at most 4 arguments (a, second, mask, out)");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) given[i] = args[i];
    const Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        const char *name = PyUnicode_AsUTF8(PyTuple_GET_ITEM(kwnames, k));
        if (!name) return NULL;
        int slot = -1;
        for (int i = 0; i < 4; i++)
            if (!strcmp(name, names[i])) slot = i;
        if (slot < 0 || slot < nargs) {
            PyErr_Format(PyExc_TypeError, "with_operands() got %s argument '%s'",
                         slot < 0 ? "an unexpected keyword" : "multiple values for", name);
            return NULL;
        }
        given[slot] = args[nargs + k];
    }
    PyObject *module = PyType_GetModule(Py_TYPE(self));
    if (!module) return NULL;
    PlanObject *copy = plan_alloc(Py_TYPE(self));
    if (!copy) return NULL;
    copy->p = PLAN(self)->p;
    Py_SETREF(copy->a, Py_NewRef(given[0]));
    Py_SETREF(copy->second, Py_NewRef(given[1]));
    Py_SETREF(copy->mask, Py_NewRef(given[2]));
    Py_SETREF(copy->out, Py_NewRef(given[3]));
    Py_SETREF(copy->layout, Py_NewRef(PLAN(self)->layout));
    Py_SETREF(copy->shape, Py_NewRef(PLAN(self)->shape));
    Py_SETREF(copy->parameter, Py_NewRef(PLAN(self)->parameter));
    Py_SETREF(copy->initial, Py_NewRef(PLAN(self)->initial));
    Py_SETREF(copy->ranges, Py_NewRef(PLAN(self)->ranges)); /* a tuple: immutable, shared as is */
    if (check_operands(module, &copy->p, copy) < 0) {
        Py_DECREF(copy);
        return NULL;
    }
    return (PyObject *)copy;
}

PyObject *
gr_plan_with_operands(PyObject *template, PyObject *a, PyObject *out)
{
    PyObject *args[4] = {a, Py_None, Py_None, out};
    return Plan_with_operands(template, args, 4, NULL);
}

static void
Plan_dealloc(PyObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    PlanObject *p = PLAN(self);
    PyObject **held[] = {&p->a,     &p->second,    &p->mask,    &p->out,   &p->layout,
                         &p->shape, &p->parameter, &p->initial, &p->ranges};
    for (size_t i = 0; i < sizeof(held) / sizeof(held[0]); i++) Py_CLEAR(*held[i]);
    type->tp_free(self);
    Py_DECREF(type);
}

static int
Plan_traverse(PyObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(PLAN(self)->a);
    Py_VISIT(PLAN(self)->second);
    Py_VISIT(PLAN(self)->mask);
    Py_VISIT(PLAN(self)->out);
    Py_VISIT(PLAN(self)->ranges);
    return 0;
}

static PyObject *
Plan_repr(PyObject *self)
{
    const gr_plan *p = &PLAN(self)->p;
    return PyUnicode_FromFormat("<gpureduce._core.Plan %s, launcher %s, variant %s, op %s, result %s, shape %R%s%s>",
                                p->kind == GR_KIND_REDUCE ? "reduce" : p->kind == GR_KIND_SCAN ? "scan" : "copy",
                                kLauncherNames[p->launcher], p->info ? p->info->name : "-",
                                p->kind == GR_KIND_COPY ? "-" : gr_op_name(p->op), gr_dtype_name(p->out_dtype),
                                PLAN(self)->shape, p->has_ranges ? ", over ranges" : "",
                                PLAN(self)->a == Py_None ? ", a template" : "");
}

#define INT_GETTER(field, expr)                                                                                        \
    static PyObject *Plan_get_##field(PyObject *self, void *closure)                                                \
    {                                                                                                                  \
        const gr_plan *p = &PLAN(self)->p;                                                                             \
        (void)p;                                                                                                       \
        return PyLong_FromLong((long)(expr));                                                                          \
    }
#define OBJ_GETTER(field)                                                                                              \
    static PyObject *Plan_get_##field(PyObject *self, void *closure) { return Py_NewRef(PLAN(self)->field); }

INT_GETTER(kind, p->kind)
INT_GETTER(launcher, p->launcher)
INT_GETTER(variant, p->kind == GR_KIND_COPY ? -1 : (long)p->variant)
INT_GETTER(op, p->op)
INT_GETTER(result_dtype, p->out_dtype)
OBJ_GETTER(a)
OBJ_GETTER(second)
OBJ_GETTER(mask)
OBJ_GETTER(out)
OBJ_GETTER(layout)
OBJ_GETTER(shape)
OBJ_GETTER(parameter)
OBJ_GETTER(initial)
OBJ_GETTER(ranges)

static PyObject *
Plan_get_exclusive(PyObject *self, void *closure)
{
    return PyBool_FromLong(PLAN(self)->p.exclusive);
}

#define FIELD(name, doc) {#name, Plan_get_##name, NULL, doc, NULL}
static PyGetSetDef Plan_getset[] = {
    FIELD(kind, "KIND_REDUCE, KIND_SCAN or KIND_COPY."),
    FIELD(launcher, "LAUNCH_FLAT (the variant's whole-array kernel), LAUNCH_AXIS or LAUNCH_COPY."),
    FIELD(variant, "The variant's index (-1 for a copy)."),
    FIELD(op, "The operator's code (op_names)."),
    FIELD(result_dtype, "The result's dtype code (dtype_names)."),
    FIELD(a, "The input Operand (None: a template)."),
    FIELD(second, "An operator's second operand (dot's b, logsumexp's weights), read at the mask's strides."),
    FIELD(mask, "where= as an Operand broadcast to the input's shape, or None."),
    FIELD(out, "The device out= Operand written in place through the layout's out strides, or None."),
    FIELD(layout, "Reduce/scan: the 12 ints of _core.SEGMENT_FIELDS; copy: (shape, in_strides, out_strides)."),
    FIELD(shape, "The result's shape (a new result is C-ordered)."),
    FIELD(parameter, "The operator's parameter (ddof, ord, conjugation, weighted result) as one result value."),
    FIELD(initial, "initial= as the bytes of one result value, or None."),
    FIELD(ranges, "A segmented reduction or scan (issue 40): (bounds, form, algorithm, mean_length, gaps,\n"
                  "max_length[, stops]), or None (all of the reduced dimension).  bounds: a 1-d contiguous int64\n"
                  "Operand, for RANGES_STARTS_STOPS the starts then as many stops (or the starts alone, with device\n"
                  "bounds, and `stops` a second such Operand), for RANGES_REDUCEAT the starts (NumPy's reduceat),\n"
                  "for RANGES_GROUP_IDS one group id per element of the reduced axis (a grouped sum: the groups are\n"
                  "the result's length along it; `stops`, if any: two zero int64 on the device where the kernels note\n"
                  "the ids out of range, the smallest below 0 and the largest at or above the groups less groups - 1);\n"
                  "algorithm: an index of range_algorithms; mean_length: a range's expected length (0: reduce_count /\n"
                  "count); gaps (scans): 1 where some positions may lie in no range (they get the identity);\n"
                  "max_length (scans): the longest range where known (0: unknown).  Reductions pass 0 for both.  A\n"
                  "reduction gives one result per (i0, i1, range), at range * the layout's `or` stride; a scan the\n"
                  "input's shape, each of its disjoint ranges scanned alone."),
    FIELD(exclusive, "An exclusive scan."),
    {NULL, NULL, NULL, NULL, NULL},
};
#undef FIELD

static PyMethodDef Plan_methods[] = {
    {"with_operands", (PyCFunction)(void (*)(void))Plan_with_operands, METH_FASTCALL | METH_KEYWORDS,
     "with_operands(a, second=None, mask=None, out=None) -> Plan: the same plan reading these operands (a=None:\n"
     "a template), verified again."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Plan_slots[] = {
    {Py_tp_doc, (void *)"Plan(*, kind, launcher, variant, op, result_dtype, a, second, mask, out, layout, shape, "
                        "parameter, initial, ranges, exclusive)\n--\n\n"
                        "One call's device work, as gpureduce/_planning/plan.py decided it (src/plan.c): read once, "
                        "verified, run by _core.run."},
    {Py_tp_new, Plan_new},
    {Py_tp_dealloc, Plan_dealloc},
    {Py_tp_traverse, Plan_traverse},
    {Py_tp_repr, Plan_repr},
    {Py_tp_methods, Plan_methods},
    {Py_tp_getset, Plan_getset},
    {0, NULL},
};

static PyType_Spec Plan_spec = {
    .name = "gpureduce._core.Plan",
    .basicsize = sizeof(PlanObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = Plan_slots,
};

PyObject *
gr_plan_type_new(PyObject *module)
{
    for (int i = 0; i < F_COUNT; i++)
        if (!g_field_names[i] && !(g_field_names[i] = PyUnicode_InternFromString(kFieldNames[i]))) return NULL;
    PyObject *type = PyType_FromModuleAndSpec(module, &Plan_spec, NULL);
    if (type) ((PyTypeObject *)type)->tp_vectorcall = Plan_vectorcall; /* Plan(...) without a kwargs dict */
    return type;
}

const gr_plan *
gr_plan_of(PyObject *module, PyObject *obj)
{
    if (Py_TYPE(obj) != (PyTypeObject *)gr_state(module)->PlanType) {
        PyErr_Format(PyExc_TypeError, "the plan must be a _core.Plan (gpureduce/_planning/plan.py), not %.200s",
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    if (!PLAN(obj)->p.in) {
        PyErr_SetString(PyExc_TypeError, "this plan is a template (a=None): give it its operands (with_operands)");
        return NULL;
    }
    return &PLAN(obj)->p;
}

const gr_plan *
gr_plan_template_of(PyObject *module, PyObject *obj)
{
    if (Py_TYPE(obj) != (PyTypeObject *)gr_state(module)->PlanType) {
        PyErr_Format(PyExc_TypeError, "the template must be a _core.Plan, not %.200s", Py_TYPE(obj)->tp_name);
        return NULL;
    }
    return &PLAN(obj)->p;
}

PyObject *
gr_plan_input(PyObject *plan)
{
    return PLAN(plan)->a;
}

PyObject *
gr_plan_out(PyObject *plan)
{
    return PLAN(plan)->out;
}

const char *const *
gr_plan_segment_fields(int *count)
{
    *count = SEGMENT_FIELD_COUNT;
    return kSegmentFields;
}
