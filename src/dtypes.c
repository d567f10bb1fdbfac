/* dtypes.c -- gr_dtype <-> NumPy dtype, from one table read on the hot path (no dtype objects made). */
#include "ext.h"

#include <string.h>

/* NumPy's kind letter of each kind of cuda/abi/dtypes.def */
#define GR_KIND_LETTER_BOOL 'b'
#define GR_KIND_LETTER_INT 'i'
#define GR_KIND_LETTER_UINT 'u'
#define GR_KIND_LETTER_FLOAT 'f'
#define GR_KIND_LETTER_COMPLEX 'c'

static const struct {
    const char *name;
    int typenum;
    char kind;              /* '\0' for a dtype without a NumPy builtin: matched by its type object (below) */
    unsigned char itemsize;
    const char *kind_name;  /* the kind column: BOOL, INT, UINT, FLOAT, COMPLEX */
    gr_dtype accumulate_as, real;
} kDtypes[GR_DTYPE_COUNT] = {
#define GR_DTYPE(NAME, name, device_type, kind, bytes, numpy, dlpack, sum_as, accumulate_as, real, ...)          \
    [GR_##NAME] = {#name, NPY_##numpy, NPY_##numpy == NPY_NOTYPE ? '\0' : GR_KIND_LETTER_##kind, bytes, #kind, \
                   GR_##accumulate_as, GR_##real},
#include "abi/dtypes.def"
#undef GR_DTYPE
};

/* dtype_table: one (name, kind, itemsize, accumulate_as, real) row per gr_dtype code (dtypes.def's columns Python
 * reads: gpureduce/_registry.py). */
PyObject *
gr_dtype_table(void)
{
    PyObject *t = PyTuple_New(GR_DTYPE_COUNT);
    if (!t) return NULL;
    for (int i = 0; i < GR_DTYPE_COUNT; i++) {
        PyObject *row = Py_BuildValue("(ssiss)", kDtypes[i].name, kDtypes[i].kind_name, (int)kDtypes[i].itemsize,
                                      kDtypes[kDtypes[i].accumulate_as].name, kDtypes[kDtypes[i].real].name);
        if (!row) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, row);
    }
    return t;
}

/* bfloat16 is no NumPy builtin: ml_dtypes registers it as a user dtype (kind 'V', its number given at
 * registration).  Looked up once at import; NULL where ml_dtypes is missing, and then no array can hold it. */
static PyArray_Descr *g_bfloat16; /* owned for the process's life */

int
gr_dtypes_init(void)
{
    if (g_bfloat16) return 0;
    PyObject *module = PyImport_ImportModule("ml_dtypes");
    if (!module) {
        if (!PyErr_ExceptionMatches(PyExc_ImportError)) return -1;
        PyErr_Clear();
        return 0;
    }
    PyObject *type = PyObject_GetAttrString(module, "bfloat16");
    Py_DECREF(module);
    if (!type) return -1;
    g_bfloat16 = PyArray_DescrFromTypeObject(type);
    Py_DECREF(type);
    return g_bfloat16 ? 0 : -1;
}

int
gr_dtype_available(gr_dtype dt)
{
    if (dt != GR_BFLOAT16 || g_bfloat16) return 1;
    PyErr_SetString(PyExc_TypeError, "bfloat16 arrays need the ml_dtypes package, which gives NumPy its bfloat16 "
                    "dtype (pip install ml_dtypes)");
    return 0;
}

const char *
gr_dtype_name(gr_dtype dt)
{
    return (dt >= 0 && dt < GR_DTYPE_COUNT) ? kDtypes[dt].name : "?";
}

gr_dtype
gr_dtype_accumulate_as(gr_dtype dt)
{
    return kDtypes[dt].accumulate_as;
}

size_t
gr_dtype_itemsize(gr_dtype dt)
{
    return kDtypes[dt].itemsize;
}

int
gr_dtype_to_typenum(gr_dtype dt)
{
    if (dt == GR_BFLOAT16) return g_bfloat16 ? g_bfloat16->type_num : NPY_NOTYPE;
    return kDtypes[dt].typenum;
}

PyArray_Descr *
gr_dtype_descr(gr_dtype dt)
{
    if (dt == GR_BFLOAT16) return g_bfloat16;
    /* NumPy's builtin descriptors are singletons that live as long as NumPy: a borrowed reference is safe. */
    PyArray_Descr *d = PyArray_DescrFromType(kDtypes[dt].typenum);
    Py_XDECREF(d);
    return d;
}

int
gr_dtype_from_descr(PyArray_Descr *descr)
{
    if (PyDataType_HASFIELDS(descr) || PyDataType_HASSUBARRAY(descr)) return -1;
    if (g_bfloat16 && descr->typeobj == g_bfloat16->typeobj) return GR_BFLOAT16;
    /* By kind and size: NPY_LONG and NPY_LONGLONG are both int64 here. */
    const char kind = descr->kind;
    const npy_intp size = PyDataType_ELSIZE(descr);
    for (int dt = 0; dt < GR_DTYPE_COUNT; dt++)
        if (kDtypes[dt].kind == kind && kDtypes[dt].itemsize == size) return dt;
    return -1;
}

void
gr_dtype_mask_names(unsigned mask, char *buf, size_t size)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int dt = 0; dt < GR_DTYPE_COUNT && used < size; dt++) {
        if (!(mask & GR_DTBIT(dt))) continue;
        int w = PyOS_snprintf(buf + used, size - used, "%s%s", used ? ", " : "", kDtypes[dt].name);
        if (w < 0) break;
        used += (size_t)w;
    }
}

/* What a dtype kind that NumPy cannot reduce holds, for the error message (NULL for the numeric kinds). */
static const char *
kind_name(const PyArray_Descr *descr)
{
    if (!descr) return NULL;
    if (PyDataType_HASFIELDS(descr)) return "structured";
    switch (descr->kind) {
    case 'O': return "Python objects";
    case 'U': return "str";
    case 'S': return "bytes";
    case 'V': return "void";
    case 'M': return "datetime";
    case 'm': return "timedelta";
    default: return NULL;
    }
}

int
gr_unsupported_dtype(const char *dtype, const PyArray_Descr *descr, const char *where, const char *hint)
{
    char names[512];
    gr_dtype_mask_names((1u << GR_DTYPE_COUNT) - 1, names, sizeof(names));
    const char *kind = kind_name(descr);
    char what[32] = "";
    if (kind) PyOS_snprintf(what, sizeof(what), " (%s)", kind);
    PyErr_Format(PyExc_TypeError, "unsupported dtype %s%s%s: gpureduce reduces %s%s", dtype, what, where ? where : "",
                 names, hint ? hint : "");
    return -1;
}
