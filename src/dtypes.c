/* dtypes.c -- gr_dtype <-> NumPy dtype. */
#include "ext.h"

static const struct {
    const char *name;
    int typenum;
} kDtypes[GR_DTYPE_COUNT] = {
    [GR_BOOL] = {"bool", NPY_BOOL},          [GR_INT8] = {"int8", NPY_INT8},
    [GR_INT16] = {"int16", NPY_INT16},       [GR_INT32] = {"int32", NPY_INT32},
    [GR_INT64] = {"int64", NPY_INT64},       [GR_UINT8] = {"uint8", NPY_UINT8},
    [GR_UINT16] = {"uint16", NPY_UINT16},    [GR_UINT32] = {"uint32", NPY_UINT32},
    [GR_UINT64] = {"uint64", NPY_UINT64},    [GR_FLOAT16] = {"float16", NPY_FLOAT16},
    [GR_FLOAT32] = {"float32", NPY_FLOAT32}, [GR_FLOAT64] = {"float64", NPY_FLOAT64},
    [GR_COMPLEX64] = {"complex64", NPY_COMPLEX64}, [GR_COMPLEX128] = {"complex128", NPY_COMPLEX128},
};

const char *
gr_dtype_name(gr_dtype dt)
{
    return (dt >= 0 && dt < GR_DTYPE_COUNT) ? kDtypes[dt].name : "?";
}

size_t
gr_dtype_itemsize(gr_dtype dt)
{
    PyArray_Descr *d = PyArray_DescrFromType(kDtypes[dt].typenum);
    const size_t size = (size_t)PyDataType_ELSIZE(d);
    Py_DECREF(d);
    return size;
}

int
gr_dtype_to_typenum(gr_dtype dt)
{
    return kDtypes[dt].typenum;
}

int
gr_dtype_from_descr(PyArray_Descr *descr)
{
    /* Compare by kind and size: NPY_LONG and NPY_LONGLONG are both int64 here. */
    const char kind = descr->kind;
    const npy_intp size = PyDataType_ELSIZE(descr);
    for (int dt = 0; dt < GR_DTYPE_COUNT; dt++) {
        PyArray_Descr *d = PyArray_DescrFromType(kDtypes[dt].typenum);
        const int match = d->kind == kind && PyDataType_ELSIZE(d) == size;
        Py_DECREF(d);
        if (match) return dt;
    }
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
