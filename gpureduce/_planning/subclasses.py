"""How the reductions and scans read an input that is an ndarray subclass (issue 36: the mask of a masked array was
dropped, ``gpureduce.sum(np.ma.array([1, 2, 3], mask=[0, 1, 0]))`` gave 6 where NumPy gives 4).

``reduce`` (gpureduce/reductions.py) and ``scan`` (gpureduce/scans.py) call here for an input `a` whose type is a
strict subclass of ``numpy.ndarray``; an exact ndarray, and anything that is no ndarray (lists, device arrays, Dask
arrays), never comes here (one type test at the call site).  The C intake (src/operand.c) refuses every subclass but
numpy.memmap as an input, so nothing below can hand the kernels a subclass unread.

* ``numpy.memmap``: its data, ``np.asarray(a)``.  NumPy's own answers for a memmap are plain ndarrays and NumPy
  scalars, as gpureduce's are (but for argmin and argmax along an axis: an in-memory memmap of the same values).
* ``numpy.ma.MaskedArray`` (exactly that class, holding a plain ndarray): numpy.ma's answers, the masked elements
  skipped.  Each function below is numpy.ma's method of that name (numpy/ma/core.py: MaskedArray.sum, prod, min,
  max, mean, var, std, argmin, argmax, any, all, ptp, cumsum, cumprod, count) line by line, with its passes over the
  data made by gpureduce: with ``where=~mask`` where the operator takes where= (min and max also with ``initial=``
  the value numpy.ma fills with, minimum_fill_value or maximum_fill_value), else over ``np.ma.filled(a, fill)`` with
  numpy.ma's fill (argmin, argmax, cumsum, cumprod); var's squared deviations are count times gpureduce's variance.
  numpy.ma's bookkeeping runs as numpy.ma runs it, on the reduced results: the result's mask, the masked singleton
  for a 0-d result with no element, its dtypes (the mean of a masked float32 array is float64), its masking of a
  mean that is not finite, and, for a nomask array, NumPy's ndarray.mean and ndarray.var divisions into MaskedArrays
  (which mask an infinite quotient and a variance over count - ddof <= 0).  ``np.ptp`` of a masked array is not
  numpy.ma's (NumPy 2 subtracts ufunc reductions, which drop the mask); gpureduce.ptp gives ``MaskedArray.ptp``'s
  answer (``np.ma.ptp``).  What numpy.ma does not define, or defines in a way not simply reproduced, raises a
  TypeError that says what to pass instead (np.ma.filled(a, value) or a.compressed()): the nan-functions,
  count_nonzero, logsumexp, vector_norm, cummax, cummin and the nan and log scans, exclusive scans, where= and
  initial= (NumPy's MaskedArray methods take neither: NumPy raises TypeError too), an out= that is a MaskedArray,
  and out= for min, max, ptp, mean, var and std.  var and std with a dtype= that is not floating raise the
  TypeError they raise for a plain array.
* Any other subclass (numpy.matrix, a subclass of a library or a user's): a TypeError.  NumPy gives a subclass
  answers of its own (a matrix keeps its results 2-d, a subclass its own type), which gpureduce does not
  reproduce; ``np.asarray(a)`` passes the values as a plain array.
"""
from __future__ import annotations

import math
import sys
import warnings

import numpy as np

from .operands import dtype_kind
from .numpy_rules import NoValue as _NoValue, given as _given
from .plan import normalize_axis_tuple
from .._registry import REDUCE_OPS, SCAN_OPS, scan_function_name

# numpy.ma's methods gpureduce reproduces (reduce's operator names); scans: cumsum and cumprod
MASKED_REDUCTIONS = ("sum", "prod", "min", "max", "mean", "var", "std", "argmin", "argmax", "any", "all", "ptp")
MASKED_SCANS = ("sum", "prod")
# numpy.ma writes a plain out= of these in ways of their own (NaN where masked, MaskError for an integer out=)
_NO_PLAIN_OUT = ("min", "max", "ptp", "mean", "var", "std")

_INSTEAD = ("pass np.ma.filled(a, value) to {verb} the data with the masked elements read as `value`, or "
            "a.compressed() to {verb} the unmasked elements only (flattened)")


def reduce_subclass(reduce, op, a, axis, dtype, out, keepdims, initial, where, variant, ddof, ord):
    """``reduce(op, a, ...)`` (gpureduce/reductions.py) for `a` of a strict ndarray subclass."""
    if type(a) is np.memmap:
        return reduce(op, np.asarray(a), axis, dtype, out, keepdims, initial, where, variant=variant, ddof=ddof,
                      ord=ord)
    name = f"gpureduce.{op}" if op in REDUCE_OPS else "gpureduce.reduce"
    ma = _numpy_ma(a, name, "reduce")
    if op not in MASKED_REDUCTIONS:
        why = _NOT_DEFINED.get(op, f"gpureduce reproduces numpy.ma's {', '.join(MASKED_REDUCTIONS)} only")
        raise _masked_refusal(name, why, "reduce")
    if _given(initial):
        raise _masked_refusal(name, f"NumPy's MaskedArray.{op}() takes no initial= (NumPy raises TypeError too)",
                              "reduce", " with initial=")
    if not (where is True or (type(where) is np.bool_ and where)):
        raise _masked_refusal(name, f"NumPy's MaskedArray.{op}() takes no where= (NumPy raises TypeError too); "
                              "np.ma.filled(a, value) with where=where & ~np.ma.getmaskarray(a) takes the unmasked "
                              "elements where `where` is True", "reduce", " with where=")
    if out is not None:
        _check_out(ma, name, op, out)
    # the keywords NumPy's function lacks, refused as Python refuses them (as the plan does for a plain array)
    if dtype is not None and op not in ("sum", "prod", "mean", "var", "std"):
        raise TypeError(f"{op}() got an unexpected keyword argument 'dtype'")
    if ddof is not None and op not in ("var", "std"):
        raise TypeError(f"{op}() got an unexpected keyword argument 'ddof'")
    if ord is not None:
        raise TypeError(f"{op}() got an unexpected keyword argument 'ord'")
    if op in ("var", "std") and dtype is not None and dtype_kind(np.dtype(dtype)) != "f":
        # numpy.ma takes the deviations from a mean summed in that dtype (truncated for integers, complex for a
        # real input); gpureduce's variance is a floating one, for plain arrays too (the plan's TypeError)
        raise TypeError(f"{op}() with dtype={np.dtype(dtype)}: gpureduce computes a variance in a floating dtype "
                        "(float16, float32 or float64)")
    m = _Masked(reduce, ma, a, axis, keepdims, variant)
    if op in ("sum", "prod"):
        return _sum(m, op, dtype, out)
    if op in ("min", "max"):
        return _extreme(m, op)
    if op in ("argmin", "argmax"):
        return _arg_extreme(m, op, out)
    if op in ("any", "all"):
        return _truth(m, op, out)
    if op == "ptp":
        return _ptp(m)
    if op == "mean":
        return _mean(m, dtype)
    ddof = 0 if ddof is None else ddof
    if op == "var":
        return _var(m, dtype, ddof)
    return _std(m, dtype, ddof)


def scan_subclass(scan, op, a, axis, dtype, out, exclusive, variant):
    """``scan(op, a, ...)`` (gpureduce/scans.py) for `a` of a strict ndarray subclass."""
    if type(a) is np.memmap:
        return scan(op, np.asarray(a), axis, dtype, out, exclusive=exclusive, variant=variant)
    name = f"gpureduce.{scan_function_name(op)}" if op in SCAN_OPS else "gpureduce.scan"
    ma = _numpy_ma(a, name, "scan")
    if op not in MASKED_SCANS:
        why = _NOT_DEFINED_SCANS.get(op, "gpureduce reproduces numpy.ma's cumsum and cumprod only")
        raise _masked_refusal(name, why, "scan")
    if exclusive is True:
        raise _masked_refusal(name, "numpy.ma has no exclusive scan", "scan")
    if isinstance(out, ma.MaskedArray):
        raise _masked_refusal(name, "numpy.ma writes the input's mask into an out= that is a MaskedArray, which "
                              "gpureduce does not reproduce; pass a plain ndarray out= (given the values only, as "
                              "NumPy gives it) or none", "scan", " and out= a MaskedArray")
    # MaskedArray.cumsum / cumprod: the filled data scanned, the result given the input's mask (flattened for
    # axis=None by __setmask__)
    result = scan(op, a.filled(0 if op == "sum" else 1), axis, dtype, out, exclusive=exclusive, variant=variant)
    if out is not None:
        return out
    result = result.view(ma.MaskedArray)
    result.__setmask__(ma.getmask(a))
    return result


# ---------------------------------------------------------------- what is refused

# why numpy.ma's answer for these is not reproduced (reduce's operator names)
_NOT_DEFINED = {
    "count_nonzero": "numpy.count_nonzero counts the masked elements for axis=None and skips them along an axis",
    **{op: "NumPy's nan-functions of a masked array replace its NaNs and then call numpy.ma's reduction, which "
           "gpureduce does not reproduce"
       for op in ("nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin", "nanargmax", "nanvar", "nanstd")},
    "logsumexp": "numpy.ma defines no logsumexp",
    "vector_norm": "numpy.ma defines no vector_norm",
}
_NOT_DEFINED_SCANS = {
    "max": "numpy.ma defines no running maximum (numpy.maximum.accumulate drops the mask)",
    "min": "numpy.ma defines no running minimum (numpy.minimum.accumulate drops the mask)",
    "logsumexp": "numpy.ma defines no logcumsumexp",
}


def _class_name(cls):
    """The class as its users write it: numpy.matrix, numpy.ma.MaskedArray, mypackage.module.Class."""
    for public in ("numpy", "numpy.ma"):
        inside = cls.__module__ == public or cls.__module__.startswith(public + ".")
        if inside and getattr(sys.modules.get(public), cls.__name__, None) is cls:
            return f"{public}.{cls.__name__}"
    return f"{cls.__module__}.{cls.__qualname__}"


def _numpy_ma(a, name, verb):
    """numpy.ma, for `a` an exact numpy.ma.MaskedArray of a plain ndarray; the TypeError for any other subclass."""
    ma = sys.modules.get("numpy.ma")  # a MaskedArray exists only once numpy.ma is imported
    if ma is not None and type(a) is ma.MaskedArray:
        if type(a.data) is np.ndarray:
            return ma
        raise TypeError(f"{name} does not take a numpy.ma.MaskedArray of {_class_name(type(a.data))} (an ndarray "
                        "subclass): NumPy gives a subclass answers of its own, which gpureduce does not reproduce. "
                        "Pass np.ma.array(np.asarray(a.data), mask=np.ma.getmask(a)) to " + verb + " its values "
                        "with the mask skipped, as numpy.ma does")
    raise TypeError(f"{name} does not take a {_class_name(type(a))} (an ndarray subclass): NumPy gives ndarray "
                    "subclasses answers of their own (a numpy.matrix keeps its results 2-d, a subclass returns its "
                    f"own type), which gpureduce does not reproduce. Pass np.asarray(a) to {verb} its values as a "
                    "plain array")


def _masked_refusal(name, why, verb, keyword=""):
    return TypeError(f"{name} does not take a numpy.ma.MaskedArray{keyword}: {why}. Instead, "
                     + _INSTEAD.format(verb=verb))


def _check_out(ma, name, op, out):
    if isinstance(out, ma.MaskedArray):
        raise _masked_refusal(name, "numpy.ma writes the result's mask into an out= that is a MaskedArray, which "
                              "gpureduce does not reproduce; pass a plain ndarray out= (given the values only, as "
                              "NumPy gives it) or none", "reduce", " and out= a MaskedArray")
    if op in _NO_PLAIN_OUT:
        raise _masked_refusal(name, f"numpy.ma's MaskedArray.{op}() writes an out= in its own way (NaN or nothing "
                              "where the result is masked, MaskError for an integer out=), which gpureduce does "
                              "not reproduce; call it without out=", "reduce", " and out=")


# ---------------------------------------------------------------- numpy.ma's methods, the passes on the GPU

class _Masked:
    """A masked array's parts and the reductions of its mask, each made once per call."""

    def __init__(self, reduce, ma, a, axis, keepdims, variant, shared=None):
        self.reduce, self.ma, self.a, self.axis, self.keepdims, self.variant = reduce, ma, a, axis, keepdims, variant
        self.data = a.data
        self.mask = ma.getmask(a)  # numpy.ma's nomask, or a bool array of a's shape
        self._shared = {} if shared is None else shared

    def kept(self):
        """The same array reduced with keepdims=True (var's mean), sharing the mask's reductions."""
        return _Masked(self.reduce, self.ma, self.a, self.axis, True, self.variant, self._shared)

    def of(self, op, x, dtype=None, out=None, where=True, initial=_NoValue, ddof=None, variant=None):
        """gpureduce's reduction `op` of the plain array `x` along this call's axes."""
        return self.reduce(op, x, self.axis, dtype, out, self.keepdims, initial, where,
                           variant=self.variant if variant is None else variant, ddof=ddof)

    def taken(self):
        """~mask: the where= of the unmasked elements."""
        if "taken" not in self._shared:
            self._shared["taken"] = ~self.mask
        return self._shared["taken"]

    def count(self):
        """MaskedArray.count(axis, keepdims) of a masked (not nomask) array: (~mask).sum(axis, dtype=intp); made
        once for both keepdims (var counts with and without)."""
        key = ("count", bool(self.keepdims))
        if key not in self._shared:
            other = ("count", not key[1])
            if other in self._shared and key[1] is False:
                self._shared[key] = self.drop_kept(self._shared[other])
            else:
                self._shared[key] = self.of("sum", self.taken(), np.intp, variant="auto")
        return self._shared[key]

    def drop_kept(self, kept):
        """A result reduced with keepdims=True as this call's keepdims gives it: without them, its reduced
        dimensions dropped (a NumPy scalar for no dimension left)."""
        if self.keepdims:
            return kept
        result = np.squeeze(kept, axis=self.axis) if np.ndim(kept) else kept
        return result[()] if np.ndim(result) == 0 else result

    def reduced_count(self):
        """NumPy's _count_reduce_items: the elements each result of a nomask array takes, as an intp."""
        shape = self.data.shape
        axes = range(len(shape)) if self.axis is None else normalize_axis_tuple(self.axis, len(shape))
        return np.intp(math.prod(shape[i] for i in axes))

    def newmask(self):
        """numpy.ma's _check_mask_axis: mask.all(axis, keepdims) (nomask for nomask), i.e. where count is 0."""
        if self.mask is self.ma.nomask:
            return self.ma.nomask
        return self.count() == 0

    def where(self):
        """where= of the unmasked elements: none needed for nomask."""
        return True if self.mask is self.ma.nomask else self.taken()


def _sum(m, op, dtype=None, out=None):
    """MaskedArray.sum and prod: filled(0).sum (filled(1).prod); masked where every element is."""
    result = m.of(op, m.data, dtype, out, where=m.where())
    if out is not None:
        return out
    newmask = m.newmask()
    if getattr(result, "ndim", 0):
        result = result.view(m.ma.MaskedArray)
        result.__setmask__(newmask)
    elif newmask:
        result = m.ma.masked
    return result


def _extreme(m, op):
    """MaskedArray.min and max: filled(minimum_fill_value).min, the masked results set to the fill_value."""
    ma = m.ma
    fill = (ma.minimum_fill_value if op == "min" else ma.maximum_fill_value)(m.a)
    if m.mask is ma.nomask or m.data.size == 0:  # empty: NumPy's error for an empty reduction, or an empty result
        result = m.of(op, m.data)
    else:  # the fill value taken into every result stands for the masked elements, as numpy.ma fills them
        result = m.of(op, m.data, where=m.taken(), initial=fill)
    newmask = m.newmask()
    result = result.view(ma.MaskedArray)
    if result.ndim:
        result.__setmask__(newmask)
        if newmask.ndim:
            np.copyto(result, result.fill_value, where=newmask)
    elif newmask:
        result = ma.masked
    return result


def _arg_extreme(m, op, out):
    """MaskedArray.argmin and argmax: the index in filled(minimum_fill_value) (maximum_...); a plain result."""
    fill = (m.ma.minimum_fill_value if op == "argmin" else m.ma.maximum_fill_value)(m.a)
    return m.of(op, m.a.filled(fill), out=out)


def _truth(m, op, out):
    """MaskedArray.any and all: filled(False).any (filled(True).all); masked where every element is."""
    d = m.of(op, m.data, out=out, where=m.where())
    if out is not None:
        return out
    newmask = m.newmask()
    d = d.view(m.ma.MaskedArray)
    if d.ndim:
        d.__setmask__(newmask)
    elif newmask:
        d = m.ma.masked
    return d


def _ptp(m):
    """MaskedArray.ptp: max - min, numpy.ma's masked arrays subtracted."""
    result = _extreme(m, "max")
    result -= _extreme(m, "min")
    return result


# ---- nomask: numpy.ma runs ndarray.mean and ndarray.var (numpy/_core/_methods.py: _mean, _var) on the MaskedArray.
# Their sums (umr_sum) give MaskedArrays, 0-d ones too, and their last division (true_divide into that result) goes
# through MaskedArray.__array_wrap__, which masks a quotient q where |q| * tiny >= the divisor (safe division's
# domain, tested on the quotient: an infinite mean, or a variance over count - ddof <= 0) and writes 1 there.
# gpureduce makes the sums; the divisions are NumPy's own, on the MaskedArrays of the results.

def _summed(ma, a, result):
    """A sum of gpureduce's (an ndarray, or a NumPy scalar for 0-d) as ufunc.reduce gives it for MaskedArray `a`."""
    result = np.asarray(result).view(ma.MaskedArray)
    result._update_from(a)
    return result


def _mean_dtype(a, dtype):
    """The accumulation dtype of numpy.ma's (and ndarray's) mean of `a`, and whether the result goes back to float16:
    float64 for bool and integers, float32 for float16, else `dtype` as given."""
    if dtype is None:
        if issubclass(a.dtype.type, (np.integer, np.bool_)):
            return np.dtype("f8"), False
        if issubclass(a.dtype.type, np.float16):
            return np.dtype("f4"), True
    return dtype, False


def _nomask_mean(m, dtype):
    """_methods._mean of a nomask MaskedArray, and MaskedArray.mean's [()]."""
    ma, a = m.ma, m.a
    rcount = m.reduced_count()
    if rcount == 0:
        warnings.warn("Mean of empty slice", RuntimeWarning, stacklevel=6)
    dtype, is_float16_result = _mean_dtype(a, dtype)
    ret = _summed(ma, a, m.of("sum", m.data, dtype))
    ret = np.true_divide(ret, rcount, out=ret, casting="unsafe", subok=False)
    if is_float16_result:
        ret = a.dtype.type(ret)
    return ret[()]


def _nomask_var(m, dtype, ddof):
    """_methods._var of a nomask MaskedArray, and MaskedArray.var's [()]."""
    ma, a = m.ma, m.a
    rcount = m.reduced_count()
    if ddof >= rcount:
        warnings.warn("Degrees of freedom <= 0 for slice", RuntimeWarning, stacklevel=6)
    mean_dtype = dtype
    if dtype is None and issubclass(a.dtype.type, (np.integer, np.bool_)):
        mean_dtype = np.dtype("f8")
    kept = m.kept()
    arrmean = _summed(ma, a, kept.of("sum", m.data, mean_dtype))
    arrmean = np.true_divide(arrmean, rcount, out=arrmean, casting="unsafe", subok=False)
    # umr_sum of the squared deviations, in var's result dtype: count times gpureduce's variance; +inf where the mean
    # above is masked (NumPy squares the elements less the 1 written there: a slice whose sum is infinite holds an
    # infinite element, or ones whose squares overflow)
    if rcount == 0:  # NumPy's sum of no squares; no variance of gpureduce's (its warnings are not numpy.ma's)
        ret_dtype = np.dtype(dtype) if dtype is not None else np.abs(np.zeros(0, mean_dtype or a.dtype)).dtype
        ret = np.zeros(np.shape(m.drop_kept(np.asarray(arrmean))), ret_dtype)
    else:
        variance = np.asarray(m.of("var", m.data, dtype, ddof=0))
        infinite = m.drop_kept(ma.getmaskarray(arrmean))
        with np.errstate(all="ignore"):
            ret = np.where(infinite, np.inf, variance * rcount).astype(variance.dtype)
    ret = _summed(ma, a, ret)
    ret = np.true_divide(ret, np.maximum(rcount - ddof, 0), out=ret, casting="unsafe", subok=False)
    return ret[()]


def _mean(m, dtype):
    """MaskedArray.mean: ndarray.mean for nomask; else sum / count in numpy.ma's arithmetic (a result that is not
    finite is masked)."""
    ma, a = m.ma, m.a
    if m.mask is ma.nomask:
        return _nomask_mean(m, dtype)
    dtype, is_float16_result = _mean_dtype(a, dtype)
    dsum = _sum(m, "sum", dtype)
    cnt = m.count()
    if cnt.shape == () and cnt == 0:
        return ma.masked
    if is_float16_result:
        return a.dtype.type(dsum * 1. / cnt)
    return dsum * 1. / cnt


def _var(m, dtype, ddof):
    """MaskedArray.var: ndarray.var for nomask; else the squared deviations from the masked mean summed, over
    count - ddof in numpy.ma's arithmetic, masked where every element is or count - ddof <= 0."""
    ma, a = m.ma, m.a
    if m.mask is ma.nomask:
        return _nomask_var(m, dtype, ddof)
    m.kept().count()  # first with keepdims (the mean's), then without them as a view (m.count)
    cnt = m.count() - ddof
    mean = _mean(m.kept(), dtype)
    if mean is ma.masked:  # a 0-d a, masked: self - masked is masked, and so is the variance
        return ma.masked
    complex_data = np.iscomplexobj(a)
    deviation = np.result_type(a.dtype, mean.dtype)  # numpy.ma's danom = self - mean
    squared = np.abs(np.zeros((), deviation)).dtype if complex_data else deviation  # |danom|**2, or danom *= danom
    # danom.sum(axis): the squared deviations of the unmasked elements summed, count times their variance (the
    # moments kernels' float64); 0 and masked where danom is masked throughout (a slice with no element, or whose
    # mean numpy.ma masked as not finite).  A slice with no element takes its masked elements instead, so no slice
    # is empty (no warning of NumPy's var, which numpy.ma does not give); its variance is not used.
    count = m.count()
    anomalies_masked = np.asarray(m.newmask()) | ma.getmaskarray(mean).reshape(np.shape(count))
    if a.size == 0:
        variance = np.zeros(np.shape(count))
    else:
        where = m.taken() | (m.kept().count() == 0)
        parts = (m.data.real, m.data.imag) if complex_data else (m.data,)
        variance = sum(np.asarray(m.of("var", part, np.float64, where=where, ddof=0)) for part in parts)
    with np.errstate(all="ignore"):
        ssd = np.where(anomalies_masked, 0, variance * count).astype(squared)
    if complex_data and a.size == 0:  # |danom|**2 (numpy.ma's power) drops the mask of an empty danom
        anomalies_masked = np.zeros_like(anomalies_masked)
    if ssd.ndim:
        ssd = ssd.view(ma.MaskedArray)
        ssd.__setmask__(anomalies_masked)
    elif anomalies_masked:
        ssd = ma.masked
    else:
        ssd = ssd[()]
    dvar = ma.divide(ssd, cnt).view(ma.MaskedArray)
    if dvar.ndim:
        dvar._mask = ma.mask_or(m.newmask(), (cnt <= 0))
        dvar._update_from(a)
    elif ma.getmask(dvar):
        dvar = ma.masked
    return dvar


def _std(m, dtype, ddof):
    """MaskedArray.std: the square root of var, numpy.ma's sqrt."""
    dvar = _var(m, dtype, ddof)
    if dvar is not m.ma.masked:
        dvar = m.ma.sqrt(dvar)
    return dvar
