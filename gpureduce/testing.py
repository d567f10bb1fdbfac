"""Test helpers for code that uses gpureduce: NumPy parity within a documented error bound.

:func:`assert_matches_numpy` runs a gpureduce function and the NumPy function of the same name on the same
values and checks what NumPy parity means for gpureduce: the same exception type where NumPy raises, the
same result dtype and shape, integer and bool results (and min, max, argmin, argmax, cummax, cummin)
exactly, and floating or complex results of sum, prod, mean, cumsum and cumprod within :func:`error_bound`
of a float64 / complex128 reference computed by NumPy on the upcast input.  :func:`for_all_variants` and
:func:`for_all_dtypes` are ``pytest.mark.parametrize`` decorators over the variant names registered in the
compiled extension (``gpureduce.variants()``, generated from ``cuda/abi/variants.def``) and over the 14 dtypes
gpureduce knows; stack them on a test function.  pytest itself is imported only when one of them is
called, so this module imports without it.

Notes
-----
Why a bound and not NumPy's value: a parallel sum adds in a tree; NumPy sums pairwise along contiguous axes
and serially along strided ones: both round, differently.  Neither is the truth, so results are compared
with the exact value (closely approximated in float64) and must lie within what the algorithm's rounding
can explain.  NumPy's own float16 sums along a strided axis accumulate in float16 and miss that mark by
far; gpureduce accumulates float16 in float32 (``cuda/primitives/types.cuh``), and the bound holds it to that.

The bound, per output element (``eps(t) = numpy.finfo(t).eps``)::

    sum, mean, cumsum:  D * eps(work) * S  +  eps(result) * |ref|  +  floor
    prod, cumprod:      D * eps(work) * sqrt(k) * |ref|  +  eps(result) * |ref|  +  floor
    min, max, argmin, argmax, cummax, cummin:  0 (exact)
    D = max(SLACK * log2(max(n, 2)), CHAIN_SLACK * sqrt(L))

* ``n`` is the number of elements reduced (the length of the scanned axis), plus one with ``initial=``;
  ``log2(n)`` is the depth of a reduction tree over them, each level adding one rounding.
* ``L`` is the variant's longest serial chain of roundings for this call (``Variant.rounding_chain``, from
  gpureduce/_accuracy.py: the elements a thread folds in a row, the atomics that land one after another in a
  result, the chain of tile prefixes of a single-pass scan, a one-thread scan's n - 1 additions; the axis
  kernels' chain for calls that are not a whole array of the variant's dtypes).  Rounding to nearest is
  unbiased on data not crafted to round one way, so a chain of ``L`` additions errs like ``eps * sqrt(L)``,
  not ``eps * L``; ``L * eps * S`` is the worst case the variant's documentation states.
* ``S`` is ``sum(|x|)`` over the reduced elements (``+ |initial|``; divided by the count for a mean), or
  ``cumsum(|x|)`` for a scan: a sum's rounding errors scale with the magnitudes added, not with the result,
  which cancellation can make arbitrarily small.
* ``k`` is the number of factors in the element (``n`` for ``prod``, ``i + 1`` at position ``i`` of a
  cumprod, ``i`` of an exclusive one): every multiplication adds one relative rounding whatever the order,
  about ``sqrt(k) * eps`` for unbiased rounding, ``k * eps`` at worst.
* ``work`` is the coarsest precision the values pass through before the result is rounded: the accumulator
  (the result dtype, except float32 for float16 results), or the result dtype itself where the input does
  not cast safely into it and is rounded to it first, as NumPy does (``sum(x_float32, dtype=float16)``).
* ``eps(result) * |ref|`` is the final rounding of the result into its dtype; ``floor`` is four times the
  result dtype's smallest subnormal, the granularity of results near zero.
* A reduction over no elements (and no ``initial``) gives the identity exactly: its bound is 0.

``SLACK = 8`` covers what a pure tree does not have beyond its depth: the short serial chains every parallel
algorithm has and a complex multiplication's larger rounding (up to ``sqrt(5)/2 * eps`` against ``eps/2`` for
a real one); ``CHAIN_SLACK = 4`` puts a chain's random walk about 14 standard deviations inside.  The variant
argument matters: ``atomic_block`` over 2**24 elements folds 32776 block partials into one result in a row,
``decoupled_lookback`` chains 4139 tile prefixes, where ``shuffle`` has a tree of depth 27.

Its limit: data crafted so that every rounding goes the same way can exceed the bound with any chain longer
than ``(D / 4)**2``; exact-valued data (small integers, powers of two) is exact in every order and is
compared with ``==`` by the project's own tests.
"""
from __future__ import annotations

import contextlib
import inspect
import math
import warnings

import numpy as np

import gpureduce

from . import _core
from ._operands import ACCUMULATOR, BFLOAT16, default_dtype, dtype_kind, finfo, intake, is_dask_array, to_host
from ._registry import DTYPE_NAMES, OPERATORS, SCAN_FUNCTIONS

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple

__all__ = ["CHAIN_SLACK", "SLACK", "assert_matches_numpy", "error_bound", "for_all_dtypes", "for_all_variants",
           "to_numpy"]

SLACK = 8.0
CHAIN_SLACK = 4.0  # times sqrt(L) for a variant's longest chain of L roundings (Variant.rounding_chain)

REDUCTIONS = tuple(op.name for op in OPERATORS if op.operands != "TWO")  # named after their operators; dot takes two
SCANS = SCAN_FUNCTIONS  # function -> scan operator
_SUM_LIKE = ("sum", "mean", "cumsum", "nansum", "nanmean", "nancumsum")
_PROD_LIKE = ("prod", "cumprod", "nanprod", "nancumprod")
_LOG_LIKE = ("logsumexp", "logcumsumexp")  # an absolute error of about the relative error of the sum of exps
# inexact, but bounded by assert_matches_numpy itself (_moments_bound, _norm_bound), not by error_bound
_OWN_BOUND = ("var", "std", "nanvar", "nanstd", "vector_norm")
# their NaN elements take no part: no error, no count
_SKIPS_NAN = ("nansum", "nanmean", "nanprod", "nancumsum", "nancumprod")
_DTYPE_KINDS = "biufc"


# ---------------------------------------------------------------- host copies


def to_numpy(a):
    """A NumPy copy (or view) of `a`, wherever it lives.

    The reference side of a comparison: device arrays are copied to the host with their own library's
    method, so that NumPy can compute on the same values; host arrays pass through.

    Parameters
    ----------
    a : array_like or device array
        A NumPy array or scalar, anything ``numpy.asarray`` takes, or a device array: CuPy and
        ``gpureduce.DeviceArray`` (``.get()``), Numba (``.copy_to_host()``), PyTorch (``.cpu().numpy()``;
        bfloat16 tensors as ``ml_dtypes.bfloat16`` arrays), or any other object exporting
        ``__cuda_array_interface__`` or DLPack.

    Returns
    -------
    numpy.ndarray
        The same values on the host, of the same dtype and shape (0-d for a scalar).

    See Also
    --------
    assert_matches_numpy : Brings its input and result home with this.

    Examples
    --------
    >>> from gpureduce.testing import to_numpy
    >>> to_numpy([1, 2, 3])
    array([1, 2, 3])
    """
    return to_host(a)


def _is_device_array(a):
    return not isinstance(a, (np.ndarray, np.generic)) and (
        hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__"))


@contextlib.contextmanager
def _quiet():
    """NumPy's and gpureduce's RuntimeWarnings (empty means, invalid values) silenced alike: the comparison is
    about results, and a warnings-as-errors setting must not fail one side only."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


# ---------------------------------------------------------------- NumPy's side


def _kind(op):
    if op in REDUCTIONS:
        return "reduce"
    if op in SCANS:
        return "scan"
    raise ValueError(f"unknown operation {op!r}; gpureduce has {', '.join(REDUCTIONS + tuple(SCANS))}")


def _scan_view(a, axis):
    """(`a` as NumPy scans it, the axis): flattened in C order for axis=None; a 0-d array as 1-d."""
    if axis is None:
        return a.ravel(), 0
    if a.ndim == 0:
        a = a.reshape(1)
    return a, normalize_axis_index(axis, a.ndim)


def _running_extreme(ufunc):
    def accumulate(a, axis=None, out=None):
        a, ax = _scan_view(np.asarray(a), axis)
        return ufunc.accumulate(a, axis=ax, out=out)

    return accumulate


# NumPy's function for each gpureduce function; cummax/cummin take cumsum's signature (axis=None flattens)
def _real_float(a):
    """`a` as logsumexp computes it: floating dtypes as they are, bool and integers in float64 (SciPy's rule)."""
    a = np.asarray(a)
    return a if dtype_kind(a.dtype) in "fc" else a.astype(np.float64)


def _logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """scipy.special.logsumexp where SciPy is installed, else the same in NumPy (_numpy_logsumexp)."""
    try:
        from scipy.special import logsumexp
    except ImportError:
        return _numpy_logsumexp(a, axis, b, keepdims, return_sign)
    return logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign)


def _numpy_logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False):
    """SciPy's logsumexp in NumPy: shifted by the largest element; weights b broadcast with a (a zero weight drops
    its element), SciPy's dtype (the common one, at least floating); NaN for a negative sum unless the sign is
    asked for, which is -1 for an empty slice as SciPy's."""
    a = _real_float(np.asarray(a))
    if b is not None:
        dtype = np.result_type(a, b if type(b) in (bool, int, float) else np.asarray(b))  # a Python number is weak
        b = np.asarray(b)
        dtype = dtype if dtype_kind(dtype) == "f" else np.dtype(np.float64)
        a, b = np.broadcast_arrays(a.astype(dtype), b.astype(dtype))
        a = np.where(b == 0, -np.inf, a)
    with np.errstate(all="ignore"):
        m = np.max(a, axis=axis, keepdims=True, initial=-np.inf)
        m = np.where(np.isfinite(m), m, 0).astype(a.dtype)
        terms = np.exp(a - m) if b is None else b * np.exp(a - m)
        total = np.sum(terms, axis=axis, keepdims=True)
        r = (np.log(np.abs(total)) + m).astype(a.dtype)
        sign = np.sign(total).astype(a.dtype)
    if a.size == 0 or (axis is not None and 0 in [a.shape[i] for i in np.atleast_1d(axis)]):
        sign = np.full_like(sign, -1.0)
    if not return_sign:
        r = np.where(total < 0, np.nan, r).astype(a.dtype)
    squeeze = (lambda v: v) if keepdims else (lambda v: np.squeeze(v, axis=axis))
    return (squeeze(r), squeeze(sign)) if return_sign else squeeze(r)


def _logcumsumexp(a, axis=None, out=None):
    a, ax = _scan_view(_real_float(a), axis)
    return np.logaddexp.accumulate(a, axis=ax, out=out)


# NumPy's (SciPy's) function for each gpureduce function; cummax/cummin take cumsum's signature
_NUMPY = {op: getattr(np, op) for op in REDUCTIONS + tuple(SCANS) if hasattr(np, op)}
_NUMPY.update(cummax=_running_extreme(np.maximum), cummin=_running_extreme(np.minimum), logsumexp=_logsumexp,
              logcumsumexp=_logcumsumexp)
if hasattr(np.linalg, "vector_norm"):  # NumPy >= 2.0
    _NUMPY["vector_norm"] = np.linalg.vector_norm


def _scan_identity(op, dtype):
    """The first element of an exclusive scan: the identity of the scan's operator in `dtype`."""
    dtype = np.dtype(dtype)
    if op in ("cumsum", "cumprod", "nancumsum", "nancumprod"):
        return dtype.type(op.endswith("prod"))
    if op == "logcumsumexp":
        return dtype.type(-np.inf)
    if dtype.kind == "c":
        raise ValueError(f"{op} of complex values has no identity, so exclusive=True has no NumPy reference")
    smallest = op == "cummax"
    if dtype.kind == "b":
        return dtype.type(not smallest)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.min if smallest else info.max)
    return dtype.type(-np.inf if smallest else np.inf)


def _shift_exclusive(a, axis, first):
    """The inclusive scan `a` made exclusive along `axis`: `first`, then every element but the last."""
    out = np.empty_like(a)
    if a.shape[axis]:
        src, dst = np.moveaxis(a, axis, 0), np.moveaxis(out, axis, 0)
        dst[0] = first
        dst[1:] = src[:-1]
    return out


def _wide_dtype(x_dtype, result_dtype):
    """float64, or complex128 where the input or the result is complex: the reference's precision."""
    return np.promote_types(np.promote_types(x_dtype, result_dtype), np.float64)


def _wide_reference(op, x, wide, axis, keepdims, initial, where, exclusive):
    """NumPy's answer computed in `wide` on the upcast input (exclusive scans included)."""
    xw = x.astype(wide)
    with _quiet():  # the mean of nothing is NaN, as the result is
        if op in SCANS:
            xs, ax = _scan_view(xw, axis)
            ref = _NUMPY[op](xs, axis=ax)
            return _shift_exclusive(ref, ax, _scan_identity(op, wide)) if exclusive else ref
        if op == "logsumexp":  # SciPy's signature: no where= or initial=
            return np.asarray(_NUMPY[op](xw, axis=axis, keepdims=keepdims))
        extra = {} if initial is None else {"initial": initial}
        return np.asarray(_NUMPY[op](xw, axis=axis, keepdims=keepdims, where=where, **extra))


# ---------------------------------------------------------------- the bound


def _result_shape(op, shape, axis, keepdims):
    if op in SCANS:
        return (math.prod(shape),) if axis is None else (shape or (1,))
    if not shape:
        return ()
    axes = range(len(shape)) if axis is None else normalize_axis_tuple(axis, len(shape))
    if keepdims:
        return tuple(1 if i in axes else side for i, side in enumerate(shape))
    return tuple(side for i, side in enumerate(shape) if i not in axes)


def _reduced_count(shape, axis):
    if axis is None:
        return math.prod(shape)
    return math.prod(shape[i] for i in normalize_axis_tuple(axis, len(shape)))


def _work_eps(x_dtype, result_dtype):
    """eps of the coarsest precision the values pass through before the result's own rounding."""
    eps = float(finfo(ACCUMULATOR.get(result_dtype, result_dtype)).eps)
    if not np.can_cast(x_dtype, result_dtype, "safe"):  # every input element is rounded to the result dtype
        eps = max(eps, float(finfo(result_dtype).eps))
    return eps


_SMS = []


def _device_sms():
    """The current device's SM count (the chains of some variants grow with it), else an H100/H200's."""
    if not _SMS:
        sms = None
        try:
            if gpureduce.device_count() > 0:
                sms = _core.device_properties()["sm_count"]
        except gpureduce.CudaError:
            pass
        _SMS.append(sms)
    return _SMS[0]


def _chain(kind, variant, op, x, result_dtype, axis, initial, where, n):
    """The variant's longest chain of roundings for this call: its flat kernel's for a whole array of its
    dtypes in NumPy's result dtype, else the axis kernels' (gpureduce/_accuracy.py)."""
    v = next(v for v in gpureduce.variants(kind=kind) if v.name == variant)
    whole = axis is None or x.ndim <= 1 or (kind == "reduce" and len(normalize_axis_tuple(axis, x.ndim)) == x.ndim)
    default = default_dtype(SCANS.get(op, op), x.dtype, _core.KIND_SCAN if kind == "scan" else _core.KIND_REDUCE)
    flat = whole and x.dtype.name in v.dtypes and result_dtype == default and initial is None and \
        where is True and SCANS.get(op, op) in v.ops  # the flat kernels' operators (not mean, nansum, ...)
    if isinstance(x, np.ndarray) and x.nbytes > _core.STREAM_FROM_BYTES:
        streamed = _streamed_chain(v, kind, x, result_dtype, axis, n, flat)
        if streamed:
            return streamed
    return v.rounding_chain(max(n, 1), _device_sms(), flat)


def _streamed_chain(v, kind, x, result_dtype, axis, n, flat):
    """The chain of a host input that streams through the device in chunks (src/stream_host.c), or None.

    Along the reduced axis a chunk holds `c` elements (`chunk` of a contiguous row, or `chunk // W - 1` rows of a
    block `W` elements wide).  A reduction of a row cut into pieces combines the pieces' results in a second
    reduction: chain(c) + chain(pieces); anything else carries the running result into the next chunk, where it
    goes through that chunk's chain again: pieces * chain(c + 1)."""
    widest = max(x.dtype.itemsize, np.dtype(result_dtype).itemsize) if kind == "scan" else x.dtype.itemsize
    chunk = _core.STREAM_CHUNK_BYTES // widest
    width = 1
    if axis is not None and x.ndim > 1 and x.flags.c_contiguous:
        axes = normalize_axis_tuple(axis, x.ndim)
        if len(axes) == 1:
            width = int(np.prod(x.shape[axes[0] + 1:], dtype=np.int64))
    if width > 1:  # blocks of rows, reduced or scanned across the rows
        # rows wider than half a chunk go strip by strip of chunk // 8 columns (GR_STREAM_STRIPS)
        c = chunk // (width if width <= chunk // 2 else chunk // 8) - 1
    else:
        c = chunk
    if n <= c:
        return None
    # a row's pieces: its head in chunks, then its last chunk tapered into STREAM_TAIL_PIECES (piece_of)
    pieces = (n - 1) // c + _core.STREAM_TAIL_PIECES if width == 1 else -(-n // c)
    sms = _device_sms()
    if kind == "reduce" and width == 1:
        return v.rounding_chain(c, sms, flat) + v.rounding_chain(pieces, sms, flat)
    return pieces * v.rounding_chain(c + 1, sms, flat and width == 1)


def _check_variant(kind, variant):
    names = [v.name for v in gpureduce.variants(kind=kind)]
    if variant not in names:
        raise ValueError(f"unknown {kind} variant {variant!r}; registered: {', '.join(names)}")


def error_bound(op, x, result_dtype, variant="auto", axis=None, *, keepdims=False, initial=None, where=True,
                exclusive=False, reference=None):
    """The absolute error gpureduce's floating-point result may have, per output element.

    The bound (see the module's documentation for its derivation) is, with ``eps(t) = numpy.finfo(t).eps``::

        sum, mean, cumsum:  D * eps(work) * S  +  eps(result) * |ref|  +  floor
        prod, cumprod:      D * eps(work) * sqrt(k) * |ref|  +  eps(result) * |ref|  +  floor
        D = max(SLACK * log2(max(n, 2)), CHAIN_SLACK * sqrt(L))

    where ``n`` is the number of reduced elements (+1 with `initial`), ``S`` the sum of their magnitudes
    (cumulative for a scan, per element counted for a mean), ``k`` the number of factors in the element,
    ``work`` the accumulator (float32 for float16 results) or the result dtype where the input is rounded
    into it, ``ref`` the exact result and ``floor`` four subnormals of the result dtype.

    Parameters
    ----------
    op : str
        A gpureduce function's name: "sum", "prod", "mean", "cumsum", "cumprod" (bounded), or "min", "max",
        "argmin", "argmax", "cummax", "cummin" (exact: the bound is 0).
    x : array_like or device array
        The input, as passed to the gpureduce function.
    result_dtype : dtype_like
        The result's dtype (NumPy's, or the one ``dtype=`` asks for).  Integer and bool results are exact.
    variant : str, optional
        A registered variant of the operation's kind (``gpureduce.variants(kind=...)``): ``L`` is its
        longest chain of roundings for this call (``Variant.rounding_chain``; the axis kernels' for a call
        that is not a whole array of the variant's dtypes in NumPy's result dtype).
    axis : None or int or tuple of ints, optional
        As for the gpureduce function.
    keepdims : bool, optional
        As for the gpureduce reduction.
    initial : scalar, optional
        As for the gpureduce reduction (None: not given).
    where : array_like of bool, optional
        As for the gpureduce reduction.
    exclusive : bool, optional
        An exclusive scan: element ``i`` holds the first ``i`` elements.
    reference : array_like, optional
        The exact result, if already computed (NumPy on `x` upcast to float64 / complex128, of the result's
        shape).  Computed here when not given.

    Returns
    -------
    numpy.ndarray
        The bound, float64, of the result's shape (0-d for a scalar result): ``|result - reference| <=
        bound`` must hold element by element.

    Raises
    ------
    ValueError
        An unknown `op` or `variant`; var, std, nanvar, nanstd or vector_norm, whose bounds depend on more than
        these arguments (assert_matches_numpy applies their own); an exclusive cummax/cummin of complex values
        (no identity).
    numpy.exceptions.AxisError
        `axis` is out of bounds.

    See Also
    --------
    assert_matches_numpy : Runs gpureduce and NumPy and applies this bound.

    Examples
    --------
    >>> import numpy as np
    >>> from gpureduce.testing import error_bound
    >>> x = np.ones(1024, np.float32)
    >>> eps = float(np.finfo(np.float32).eps)
    >>> bool(np.isclose(error_bound("sum", x, np.float32), 8 * eps * 10 * 1024 + eps * 1024, rtol=1e-6))
    True
    >>> error_bound("max", x, np.float32)
    array(0.)
    >>> error_bound("cumsum", np.ones(4), np.float64).shape
    (4,)
    """
    kind = _kind(op)
    _check_variant(kind, variant)
    if op in _OWN_BOUND:
        raise ValueError(f"error_bound has no bound for {op}: its error depends on its own argument (ddof, ord) and "
                         f"on the data's spread; assert_matches_numpy checks {op} against a bound of its own")
    x = to_numpy(x)
    where = to_numpy(where) if _is_device_array(where) else where
    result_dtype = np.dtype(result_dtype)
    if op not in _SUM_LIKE + _PROD_LIKE + _LOG_LIKE or dtype_kind(result_dtype) not in "fc":
        return np.zeros(_result_shape(op, x.shape, axis, keepdims))
    wide = _wide_dtype(x.dtype, result_dtype)
    if reference is None:
        reference = _wide_reference(op, x, wide, axis, keepdims, initial, where, exclusive)
    abs_ref = np.abs(np.asarray(reference))
    abs_x = np.abs(x.astype(wide))
    if op in _SKIPS_NAN:
        numbers = ~np.isnan(abs_x)
        abs_x = np.where(numbers, abs_x, 0.0)
        where = np.broadcast_to(where, x.shape) & numbers
    # `scale`: what the accumulated rounding errors are proportional to, per output element
    if op in _LOG_LIKE:  # each step's rounding is relative to |running value| + 1 (log1p of a sum of exps)
        if kind == "scan":
            scanned, ax = _scan_view(x, axis)
            n = scanned.shape[ax]
        else:
            n = _reduced_count(x.shape, axis)
        scale = np.where(np.isfinite(abs_ref), abs_ref, 0.0) + 1.0
    elif kind == "scan":
        abs_x, ax = _scan_view(abs_x, axis)
        n = abs_x.shape[ax]
        if op in ("cumsum", "nancumsum"):
            scale = np.cumsum(abs_x, axis=ax)
            if exclusive:
                scale = _shift_exclusive(scale, ax, 0.0)
        else:
            factors = np.arange(n, dtype=np.float64) + (not exclusive)
            shape = [1] * abs_x.ndim
            shape[ax] = n
            with np.errstate(over="ignore"):  # a product near the dtype's limit: an infinite bound is right
                scale = np.sqrt(factors.reshape(shape)) * abs_ref
    else:
        n = _reduced_count(x.shape, axis) + (initial is not None)
        if n == 0:  # the identity, exactly
            return np.zeros(np.shape(reference))
        if op in ("prod", "nanprod"):
            scale = math.sqrt(max(n, 2)) * abs_ref
        else:
            scale = np.sum(abs_x, axis=axis, keepdims=keepdims, where=where)
            if initial is not None:
                scale = scale + abs(initial)
            if op in ("mean", "nanmean"):
                taken = np.sum(np.broadcast_to(where, x.shape), axis=axis, keepdims=keepdims)
                scale = scale / np.maximum(taken, 1)
    depth = max(SLACK * math.log2(max(n, 2)), CHAIN_SLACK * math.sqrt(_chain(kind, variant, op, x, result_dtype,
                                                                              axis, initial, where, n)))
    accumulated = depth * _work_eps(x.dtype, result_dtype) * scale
    final_rounding = float(finfo(result_dtype).eps) * abs_ref
    floor = 4.0 * float(finfo(result_dtype).smallest_subnormal)
    return np.asarray(accumulated + final_rounding + floor, dtype=np.float64)


# ---------------------------------------------------------------- the comparison


def _summary(value):
    if isinstance(value, np.ndarray) or _is_device_array(value):
        shape = getattr(value, "shape", "?")
        return f"<{type(value).__name__} of shape {tuple(shape)}>"
    return repr(value)


def _describe(op, variant, host_x, args, kwargs):
    arguments = [_summary(a) for a in args] + [f"{k}={_summary(v)}" for k, v in kwargs.items()]
    call = ", ".join(["x"] + arguments + [f"variant={variant!r}"])
    return f"gpureduce.{op}({call}) on x of dtype {host_x.dtype} and shape {host_x.shape}"


def _expect_same_error(call, numpy_error, what):
    """gpureduce must raise what NumPy raised: an exception NumPy's type catches (its class or a subclass)."""
    try:
        with _quiet():
            call()
    except Exception as error:
        if isinstance(error, type(numpy_error)):
            return
        raise AssertionError(f"{what}: NumPy raises {type(numpy_error).__name__} ({numpy_error}), gpureduce "
                             f"raises {type(error).__name__} ({error})") from error
    raise AssertionError(f"{what}: NumPy raises {type(numpy_error).__name__} ({numpy_error}), gpureduce "
                         "raises nothing")


def _compare(got, expected, reference, bound, what, how):
    """Element-wise check; the AssertionError names the worst element (largest error relative to its bound)."""
    same = got == expected
    if dtype_kind(expected.dtype) in "fc":
        same |= np.isnan(got) & np.isnan(expected)
    if bound is None:
        ok = same
        badness = np.where(ok, 0.0, np.inf)
    else:
        bound = np.broadcast_to(bound, got.shape)
        finite = np.isfinite(expected)
        with np.errstate(all="ignore"):
            error = np.abs(got.astype(reference.dtype) - reference)
            within = error <= bound  # a NaN where NumPy has a number fails here
            ok = np.where(finite, within, same)  # NaN and inf where NumPy has them, exactly
            badness = np.where(ok, 0.0, np.where(finite & ~np.isnan(error), error / bound, np.inf))
    if ok.all():
        return
    at = np.unravel_index(int(np.argmax(badness)), got.shape) if got.ndim else ()
    worst = f"got {got[at]!r}"
    if bound is None:
        worst += f", NumPy gives {expected[at]!r} (compared exactly)"
    elif not np.isfinite(expected[at]):
        worst += f", NumPy gives {expected[at]!r} (non-finite results must match exactly)"
    else:
        worst += (f", {reference.dtype} reference {reference[at]!r}: |error| {error[at]:.3g} > bound "
                  f"{bound[at]:.3g} ({how})")
    index = f" at index {tuple(int(i) for i in at)}" if at else ""
    raise AssertionError(f"{what}: {int(np.size(ok) - np.count_nonzero(ok))} of {np.size(ok)} result elements "
                         f"({got.dtype}, shape {got.shape}) off; worst{index}: {worst}")


def assert_matches_numpy(op, x, *args, variant="auto", rtol=None, **kwargs):
    """Check that ``gpureduce.<op>(x, ...)`` gives NumPy's answer.

    Calls ``getattr(gpureduce, op)(x, *args, variant=variant, **kwargs)`` and the NumPy function of the same
    name on a host copy of `x` (``numpy.maximum.accumulate`` / ``numpy.minimum.accumulate`` for cummax and
    cummin, flattening for ``axis=None`` like ``numpy.cumsum``; an ``exclusive=True`` scan is NumPy's
    inclusive one shifted by one element, starting from the operator's identity), then checks:

    * where NumPy raises, gpureduce raises an exception of the same type (the message may differ);
    * the result's dtype and shape are NumPy's; a 0-d result is a NumPy scalar for a host `x` and a 0-d device
      array (of `x`'s kind) for a device one, as its own library gives; ``out=`` is returned;
    * integer and bool results, and min, max, argmin, argmax, cummax, cummin, equal NumPy's exactly (NaN
      where NumPy has NaN);
    * floating and complex results of sum, prod, mean, cumsum, cumprod lie within :func:`error_bound` of a
      float64 / complex128 reference computed by NumPy on the upcast input; where NumPy's result is NaN or
      infinite, gpureduce's is the same.

    Parameters
    ----------
    op : str
        The function's name: "sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all",
        "count_nonzero", "cumsum", "cumprod", "cummax" or "cummin".
    x : array_like or device array
        The input, passed to gpureduce as it is: a NumPy array, or a device array (CuPy, PyTorch, Numba,
        ``gpureduce.DeviceArray``, anything exporting ``__cuda_array_interface__`` or DLPack), which is
        copied to the host for NumPy with :func:`to_numpy`.
    *args
        Further positional arguments of both functions (``axis``, ``dtype``; pass ``out`` by keyword, so that
        NumPy gets a copy of it).
    variant : str, optional
        The gpureduce variant to run (default "auto").
    rtol : float, optional
        Replaces the error bound for floating results by ``rtol * |reference|``.  Exact comparisons stay
        exact.
    **kwargs
        Keyword arguments of both functions (``axis``, ``dtype``, ``keepdims``, ``initial``, ``where``,
        ``out``; ``exclusive`` for scans).  Device arrays among them (an ``out=`` or ``where=`` on the GPU)
        go to NumPy as host copies; NumPy never writes into the caller's ``out=``.

    Returns
    -------
    object
        The result gpureduce returned, for further checks (None where both raised).

    Raises
    ------
    AssertionError
        gpureduce's answer differs from NumPy's: the message names the call (op, variant, input dtype and
        shape), and the worst element with its error and bound.
    ValueError
        An unknown `op`, or an exclusive cummax/cummin of complex values (NumPy has no identity for them).

    See Also
    --------
    error_bound : The bound floating results are held to.
    for_all_variants, for_all_dtypes : Parametrize a test over variants and dtypes.

    Examples
    --------
    >>> import numpy as np
    >>> from gpureduce.testing import assert_matches_numpy
    >>> x = np.random.default_rng(0).uniform(-1, 1, (300, 7)).astype(np.float32)
    >>> assert_matches_numpy("sum", x, axis=0)  # doctest: +SKIP
    >>> assert_matches_numpy("cumsum", x, axis=1, exclusive=True, variant="cub")  # doctest: +SKIP
    >>> assert_matches_numpy("max", np.zeros(0))  # both raise ValueError: passes  # doctest: +SKIP
    """
    kind = _kind(op)
    function = getattr(gpureduce, op)
    host_x = to_numpy(x)
    what = _describe(op, variant, host_x, args, kwargs)
    exclusive = kind == "scan" and bool(kwargs.get("exclusive", False))
    numpy_args = [to_numpy(a) if _is_device_array(a) else a for a in args]
    numpy_kwargs = {k: to_numpy(v) if _is_device_array(v) else v for k, v in kwargs.items()
                    if not (kind == "scan" and k == "exclusive")}
    out = kwargs.get("out")
    if out is not None:
        numpy_kwargs["out"] = np.array(to_numpy(out))  # NumPy writes a copy, not the caller's out

    def call_gpureduce():
        result = function(x, *args, variant=variant, **kwargs)
        return result.compute() if is_dask_array(result) else result  # a Dask array's result is lazy

    # NumPy has no bfloat16 arithmetic of its own: ml_dtypes' loops round every step, and NumPy's nan-functions
    # and vector_norm do not count bfloat16 as a float.  Its reference runs on the input in float32, and a float32
    # result where none was asked for (dtype=, out=) is rounded to bfloat16, the dtype gpureduce (and PyTorch) give.
    numpy_x = host_x.astype(np.float32) if host_x.dtype == BFLOAT16 else host_x
    try:
        with _quiet():
            expected = _NUMPY[op](numpy_x, *numpy_args, **numpy_kwargs)
    except Exception as numpy_error:  # noqa: BLE001 - whatever NumPy raises is the reference
        _expect_same_error(call_gpureduce, numpy_error, what)
        return None
    expected = np.array(expected)  # a copy: gpureduce may write a positional out= that NumPy returned
    # the arguments by name, as the NumPy call that just succeeded took them (only those given)
    named = inspect.signature(_NUMPY[op]).bind(host_x, *numpy_args, **numpy_kwargs).arguments
    if numpy_x is not host_x and expected.dtype == np.float32 and named.get("dtype") is None and out is None:
        expected = expected.astype(BFLOAT16)
    axis = named.get("axis")
    if exclusive:
        expected, ax = _scan_view(expected, axis)
        expected = _shift_exclusive(expected, ax, _scan_identity(op, expected.dtype))
    try:
        with _quiet():
            result = call_gpureduce()
    except Exception as error:
        raise AssertionError(f"{what}: gpureduce raises {type(error).__name__} ({error}); NumPy returns a "
                             f"{expected.dtype} result of shape {expected.shape}") from error

    if out is not None and result is not out:
        raise AssertionError(f"{what}: returned a {type(result).__name__}, not the out= array")
    if out is None and expected.ndim == 0:
        on_device = _is_device_array(x) and not intake(x).host  # (a DLPack exporter may hold host memory)
        if not on_device and not isinstance(result, np.generic):
            raise AssertionError(f"{what}: a 0-d result of a host input must be a NumPy scalar, as NumPy's; got a "
                                 f"{type(result).__name__}")
        if on_device and (isinstance(result, (np.ndarray, np.generic)) or tuple(result.shape) != ()):
            raise AssertionError(f"{what}: a 0-d result of a device input must be a 0-d device array, as its "
                                 f"library's own reductions give; got a {type(result).__name__}")
    got = to_numpy(result)
    if got.dtype != expected.dtype:
        raise AssertionError(f"{what}: result dtype {got.dtype}, NumPy gives {expected.dtype}")
    if got.shape != expected.shape:
        raise AssertionError(f"{what}: result shape {got.shape}, NumPy gives {expected.shape}")

    reference = bound = None
    how = ""
    if op in _SUM_LIKE + _PROD_LIKE + _LOG_LIKE and dtype_kind(expected.dtype) in "fc":
        where = named.get("where", True)
        extra = dict(keepdims=bool(named.get("keepdims", False)), initial=named.get("initial"), where=where,
                     exclusive=exclusive)
        wide = _wide_dtype(host_x.dtype, expected.dtype)
        reference = _wide_reference(op, host_x, wide, axis, **extra)
        if rtol is None:
            bound = error_bound(op, host_x, expected.dtype, variant, axis, reference=reference, **extra)
            how = f"gpureduce.testing.error_bound, SLACK={SLACK:g}"
        else:
            bound = rtol * np.abs(reference)
            how = f"rtol={rtol:g}"
    elif op == "vector_norm" and dtype_kind(expected.dtype) == "f":
        reference, bound = _norm_bound(host_x, expected.dtype, variant, named)
        if rtol is not None:
            bound = rtol * np.abs(reference)
        # NumPy sums |x|^ord in the result dtype: a float16 (float32) sum overflows where the norm does not,
        # gpureduce's float64 one does not; where the result is finite or not is the float64 reference's
        with np.errstate(over="ignore"):
            expected = reference.astype(expected.dtype)
        how = "a few roundings of the result plus the float64 sum's error" if rtol is None else f"rtol={rtol:g}"
    elif op in ("var", "std", "nanvar", "nanstd") and dtype_kind(expected.dtype) == "f":
        reference, bound = _moments_bound(op, host_x, expected.dtype, axis, named)
        if rtol is not None:
            bound = rtol * np.abs(reference)
        how = "a few roundings of the result plus the shifted sums' float64 error" if rtol is None else \
            f"rtol={rtol:g}"
    _compare(got, expected, reference, bound, what, how)
    return result


def _norm_bound(x, result_dtype, variant, named):
    """vector_norm's float64 reference and bound: 4 roundings of the result dtype, plus the roundings of gpureduce's
    float64 sum of nonnegative terms (cuda/primitives/reducers.cuh: NormReducer), which the 1/ord power scales by
    1/|ord|: at most L of them relative to the sum for the variant's longest chain of L additions, as they add up
    with no cancellation (terms of a few distinct values, |x|^0.5 of small integers, add their roundings up
    beyond error_bound's statistical sqrt(L) of a sum of mixed signs)."""
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    options = {k: v for k, v in named.items() if k in ("axis", "keepdims", "ord")}
    order = 2.0 if options.get("ord") is None else float(options["ord"])
    with _quiet():
        reference = np.asarray(np.linalg.vector_norm(wide, **options))
    n = x.size if reference.size == 0 else max(x.size // reference.size, 1)
    power = 1.0 if order in (0.0, math.inf, -math.inf) else max(1.0, 1.0 / abs(order))
    axis = options.get("axis")
    depth = max(SLACK * math.log2(max(n, 2)), _chain("reduce", variant, "vector_norm", x, result_dtype, axis, None,
                                                     True, n))
    rel = 4 * float(finfo(result_dtype).eps) + depth * float(np.finfo(np.float64).eps) * power
    return reference, rel * np.abs(reference) + 4 * float(finfo(result_dtype).smallest_subnormal)


def _moments_bound(op, x, result_dtype, axis, named):
    """var/std's (nanvar/nanstd's) float64 (complex128) reference and bound: 8 roundings of the result dtype, plus
    what gpureduce's shifted sums may lose in float64, 4 log2(n) eps (1 + z^2), z the largest distance of an
    element (a possible pivot) from the mean in standard deviations (cuda/primitives/reducers.cuh: MomentsReducer);
    the NaNs of the nan forms take no part."""
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    options = {k: v for k, v in named.items() if k in ("keepdims", "where", "ddof", "correction")}
    with _quiet():
        reference = np.asarray(getattr(np, op)(wide, axis=axis, **options))
        flat = wide.ravel()
        flat = flat[~np.isnan(flat)]
        spread = float(np.var(flat)) if flat.size else 0.0
        z2 = float(np.max(np.abs(flat - np.mean(flat)) ** 2)) / spread if spread > 0 else 0.0
    rel = 8 * float(finfo(result_dtype).eps) + 4 * math.log2(max(x.size, 2)) * float(np.finfo(np.float64).eps) * \
        (1 + z2)
    return reference, rel * np.abs(reference) + 4 * float(finfo(result_dtype).smallest_subnormal)


# ---------------------------------------------------------------- parametrizing


def _pytest():
    import pytest  # here, not at the top: the module imports where pytest is not installed

    return pytest


def _variant_names(kind, op):
    if op is None:
        return [v.name for v in gpureduce.variants(kind=kind)]
    if _kind(op) == "scan" and kind == "reduce":
        raise ValueError(f"{op} is a scan, not a reduction")
    return [v.name for v in gpureduce.variants(kind=kind, op=op)]


def for_all_variants(kind, op=None, name="variant"):
    """Parametrize a test over the registered variant names of one kind.

    The names come from ``gpureduce.variants()`` (the table compiled from ``cuda/abi/variants.def``), never from
    a list kept by hand: a new variant is tested as soon as it is registered.

    Parameters
    ----------
    kind : {"reduce", "scan"}
        Which variants.
    op : str, optional
        Only the variants that implement this operation: an operator of the registry ("sum", "prod", "min",
        "max") or a function's name ("cumsum", "mean", "argmax", ...; mean, argmin and argmax select the
        variants with the "axes" property).
    name : str, optional
        The test function's argument that receives the name (default "variant").

    Returns
    -------
    pytest.MarkDecorator
        ``pytest.mark.parametrize(name, [...names...])``; the test ids are the variant names.

    Raises
    ------
    ValueError
        An unknown `kind` or `op`, or no variant implements `op`.
    ImportError
        pytest is not installed.

    See Also
    --------
    gpureduce.variants : The registry, with each variant's operators, dtypes and properties.
    for_all_dtypes : The same over dtypes; the two stack.

    Examples
    --------
    >>> import numpy as np
    >>> from gpureduce.testing import assert_matches_numpy, for_all_dtypes, for_all_variants
    >>> @for_all_variants("scan", op="cumsum")
    ... @for_all_dtypes("f")
    ... def test_cumsum(variant, dtype):
    ...     assert_matches_numpy("cumsum", np.linspace(-1, 1, 5000, dtype=dtype), variant=variant)
    """
    names = _variant_names(kind, op)
    if not names:
        raise ValueError(f"no {kind} variant implements {op!r}")
    return _pytest().mark.parametrize(name, names)


def for_all_dtypes(kinds=_DTYPE_KINDS, name="dtype"):
    """Parametrize a test over the dtypes gpureduce knows, optionally only some kinds of them.

    The dtypes are the registry's (``gpureduce._registry.DTYPE_NAMES``, the extension's dtype table): bool,
    int8..int64, uint8..uint64, float16, bfloat16 (ml_dtypes), float32, float64, complex64, complex128.

    Parameters
    ----------
    kinds : str, optional
        NumPy kind characters to keep: "b" bool, "i" signed, "u" unsigned integers, "f" floating, "c"
        complex (default all: "biufc").
    name : str, optional
        The test function's argument that receives the ``numpy.dtype`` (default "dtype").

    Returns
    -------
    pytest.MarkDecorator
        ``pytest.mark.parametrize(name, [numpy.dtype, ...])`` with the dtype names as test ids.

    Raises
    ------
    ValueError
        `kinds` holds a character other than b, i, u, f, c.
    ImportError
        pytest is not installed.

    See Also
    --------
    for_all_variants : The same over variants; the two stack.

    Examples
    --------
    >>> from gpureduce.testing import for_all_dtypes
    >>> @for_all_dtypes("iu")
    ... def test_integer_sums_are_exact(dtype):
    ...     ...
    """
    unknown = sorted(set(kinds) - set(_DTYPE_KINDS))
    if unknown:
        raise ValueError(f"unknown dtype kinds {''.join(unknown)!r}; kinds are {_DTYPE_KINDS!r}")
    dtypes = [np.dtype(dt) for dt in DTYPE_NAMES if dtype_kind(np.dtype(dt)) in kinds]
    return _pytest().mark.parametrize(name, dtypes, ids=[dt.name for dt in dtypes])
