"""The error bound floating results are held to (``gpureduce.testing.error_bound``, whose module documents its
derivation) and the NumPy reference it is measured from, shared by gpureduce.testing and the benchmark's checks.

Below the public functions: it reads the registry and the extension, never the gpureduce package.
"""
from __future__ import annotations

import contextlib
import math
import warnings
from fractions import Fraction

import numpy as np

from . import _core, _registry
from ._planning.operands import ACCUMULATOR, COMPLEX_PART, default_dtype, dtype_kind, finfo, to_host
from ._registry import OPERATORS, SCAN_FUNCTIONS, scan_function_name

try:  # NumPy >= 2.0
    from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple
except ImportError:  # NumPy 1.x
    from numpy.core.multiarray import normalize_axis_index
    from numpy.core.numeric import normalize_axis_tuple


SLACK = 8.0


CHAIN_SLACK = 4.0  # times sqrt(L) for a variant's longest chain of L roundings (Variant.rounding_chain)


REDUCTIONS = tuple(op.name for op in OPERATORS if op.operands != "TWO")  # named after their operators; dot takes two


SCANS = SCAN_FUNCTIONS  # function -> scan operator
EXACT_OF = {op.name: op.exact for op in OPERATORS}  # nansum -> sum: the operator of integer and bool inputs
_RESULT_RULE = {op.name: op.result for op in OPERATORS}


def _family(bound):
    """The functions, reductions and their scans, of the operators of error-bound family `bound` (ops.def)."""
    return tuple(name for op in OPERATORS if op.bound == bound
                 for name in (op.name, *((scan_function_name(op.name),) if op.scans else ())))


SUM_LIKE = _family("SUM")  # sum, mean, cumsum, nansum, ...


PROD_LIKE = _family("PROD")


LOG_LIKE = _family("LOG")  # an absolute error of about the relative error of the sum of exps


# inexact, but bounded by assert_matches_numpy itself (_moments_bound, _norm_bound), not by error_bound
_OWN_BOUND = _family("OWN")


# their NaN elements take no part: no error, no count (the nan forms of the sums and products)
_SKIPS_NAN = tuple(name for name in SUM_LIKE + PROD_LIKE if SCANS.get(name, name) != EXACT_OF[SCANS.get(name, name)])


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


def is_device_array(a):
    return not isinstance(a, (np.ndarray, np.generic)) and (
        hasattr(a, "__cuda_array_interface__") or hasattr(a, "__dlpack__"))


@contextlib.contextmanager
def quiet():
    """NumPy's and gpureduce's RuntimeWarnings (empty means, invalid values) silenced alike: the comparison is
    about results, and a warnings-as-errors setting must not fail one side only."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def kind_of(op):
    if op in REDUCTIONS:
        return "reduce"
    if op in SCANS:
        return "scan"
    raise ValueError(f"unknown operation {op!r}; gpureduce has {', '.join(REDUCTIONS + tuple(SCANS))}")


def scan_view(a, axis):
    """(`a` as NumPy scans it, the axis): flattened in C order for axis=None; a 0-d array as 1-d."""
    if axis is None:
        return a.ravel(), 0
    if a.ndim == 0:
        a = a.reshape(1)
    return a, normalize_axis_index(axis, a.ndim)


def _numpy_function(reference):
    """The function ops.def's reference column names ("numpy.linalg.vector_norm"), None where this NumPy lacks it;
    SciPy's logsumexp through this module's stand-in, as SciPy may be absent."""
    if reference == "scipy.special.logsumexp":
        return _logsumexp
    module, _, name = reference.rpartition(".")
    if module.split(".")[0] != "numpy":
        raise ValueError(f"ops.def names a reference outside NumPy: {reference}")
    found = np
    for part in module.split(".")[1:] + [name]:
        found = getattr(found, part, None)
    return found




def _running_extreme(ufunc):
    def accumulate(a, axis=None, out=None):
        a, ax = scan_view(np.asarray(a), axis)
        return ufunc.accumulate(a, axis=ax, out=out)

    return accumulate


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
    a, ax = scan_view(_real_float(a), axis)
    return np.logaddexp.accumulate(a, axis=ax, out=out)


# The function each gpureduce function is compared with: a reduction's from its operator's record (ops.def's
# reference column), a scan's NumPy's of its name, or for those NumPy lacks (cummax, cummin, logcumsumexp) the
# running extreme and the running logaddexp, with cumsum's signature (axis=None flattens)
NUMPY_FUNCTIONS = {op.name: _numpy_function(op.reference) for op in OPERATORS if op.operands != "TWO"}
NUMPY_FUNCTIONS.update({name: getattr(np, name) for name in SCANS if hasattr(np, name)})
NUMPY_FUNCTIONS.update(cummax=_running_extreme(np.maximum), cummin=_running_extreme(np.minimum),
                       logcumsumexp=_logcumsumexp)
NUMPY_FUNCTIONS = {name: function for name, function in NUMPY_FUNCTIONS.items() if function is not None}



def scan_identity(op, dtype):
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


def shift_exclusive(a, axis, first):
    """The inclusive scan `a` made exclusive along `axis`: `first`, then every element but the last."""
    out = np.empty_like(a)
    if a.shape[axis]:
        src, dst = np.moveaxis(a, axis, 0), np.moveaxis(out, axis, 0)
        dst[0] = first
        dst[1:] = src[:-1]
    return out


def wide_dtype(x_dtype, result_dtype):
    """float64, or complex128 where the input or the result is complex: the reference's precision."""
    return np.promote_types(np.promote_types(x_dtype, result_dtype), np.float64)


def wide_reference(op, x, wide, axis, keepdims, initial, where, exclusive):
    """NumPy's answer computed in `wide` on the upcast input (exclusive scans included)."""
    xw = x.astype(wide)
    with quiet():  # the mean of nothing is NaN, as the result is
        if op in SCANS:
            xs, ax = scan_view(xw, axis)
            ref = NUMPY_FUNCTIONS[op](xs, axis=ax)
            return shift_exclusive(ref, ax, scan_identity(op, wide)) if exclusive else ref
        if op == "logsumexp":  # SciPy's signature: no where= or initial=
            return np.asarray(NUMPY_FUNCTIONS[op](xw, axis=axis, keepdims=keepdims))
        extra = {} if initial is None else {"initial": initial}
        return np.asarray(NUMPY_FUNCTIONS[op](xw, axis=axis, keepdims=keepdims, where=where, **extra))


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
            if _core.device_count() > 0:
                sms = _core.device_properties()["sm_count"]
        except _core.CudaError:
            pass
        _SMS.append(sms)
    return _SMS[0]


def correctly_rounded_sum(x, dtype, count=None):
    """The exact real sum of `x`'s elements (divided by `count` where given: the exact mean) rounded once to `dtype`
    (float16, bfloat16, float32 or float64; to nearest, ties to even), as the variant "exact" gives it: NaN where
    an element is NaN or both infinities are there (or `count` is 0: the mean of nothing), an infinity where one is
    or the result rounds beyond the dtype's range, +0.0 for an exact zero (NumPy's sums start from +0.0)."""
    dtype = np.dtype(dtype)
    v = np.asarray(x, dtype=np.float64).ravel()  # float32 and half elements are float64 ones exactly
    if count == 0 or np.isnan(v).any() or (np.isposinf(v).any() and np.isneginf(v).any()):
        return dtype.type(np.nan)
    if np.isinf(v).any():
        return dtype.type(np.inf if np.isposinf(v).any() else -np.inf)
    if not v.any():
        return dtype.type(0.0)
    if dtype == np.float64 and count is None:
        try:
            return np.float64(math.fsum(v))  # the exact sum rounded to float64 (Shewchuk's partials)
        except OverflowError:
            pass
    return rational_rounded(_exact_sum(v) / (count or 1), dtype)


def correctly_rounded_cumsum(x, dtype, exclusive=False, nan_form=False):
    """Each prefix sum of 1-D `x` (float16, bfloat16, float32 or float64 values) computed exactly and rounded once to
    `dtype`, as the scan variant "exact" gives them (cuda/primitives/exact_scan.cuh): NaN where a NaN (not in the
    nan form, which takes a NaN as +0.0) or both infinities came before, an infinity where one did, -0.0 where every
    element of the prefix is -0.0 (NumPy's cumsum of zeros), else the exact sum rounded (an exact zero +0.0); an
    exclusive scan's element i is the prefix before it, +0.0 first."""
    dtype = np.dtype(dtype)
    values = np.asarray(x, dtype=np.float64).ravel()  # float32 and half elements are float64 ones exactly
    out = np.empty(values.size, dtype)
    units = 2 ** 1074  # every finite float64 is an integer multiple of 2^-1074
    total, nan, plus, minus, negative_zeros, empty = 0, False, False, False, True, True
    rounded_at = None, None  # (total, its rounding): a zero added keeps the rounding
    for i, v in enumerate(values.tolist()):
        if exclusive:
            value = None if empty else (nan, plus, minus, negative_zeros, total)
        if math.isnan(v):
            nan = nan or not nan_form
            negative_zeros = False
        elif math.isinf(v):
            plus, minus, negative_zeros = plus or v > 0, minus or v < 0, False
        else:
            numerator, denominator = v.as_integer_ratio()
            total += numerator * (units // denominator)
            negative_zeros = negative_zeros and v == 0 and math.copysign(1.0, v) < 0
        empty = False
        if not exclusive:
            value = (nan, plus, minus, negative_zeros, total)
        if value is None:
            out[i] = 0.0
            continue
        v_nan, v_plus, v_minus, v_negative_zeros, v_total = value
        if v_nan or (v_plus and v_minus):
            out[i] = np.nan
        elif v_plus or v_minus:
            out[i] = np.inf if v_plus else -np.inf
        elif v_negative_zeros:
            out[i] = -0.0
        else:
            if rounded_at[0] != v_total:
                rounded_at = v_total, rational_rounded(Fraction(v_total, units), dtype)
            out[i] = rounded_at[1]
    return out


def same_exact_result(got, want):
    """Whether `got` is `want` (exact_result's), as the variant "exact" promises it: the same values in the same
    dtype with the same signs (a zero's too), any NaN where it is NaN; a complex result part by part."""
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind == "c" and got.dtype == want.dtype:  # part by part
        return same_exact_result(got.real, want.real) and same_exact_result(got.imag, want.imag)
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want, equal_nan=True):
        return False
    numbers = ~np.isnan(want)
    return bool(np.array_equal(np.signbit(got)[numbers], np.signbit(want)[numbers]))


def _exact_sum(v):
    """The exact sum of finite float64 values `v` as a Fraction: math.fsum's rounding of it, then of what is left,
    until nothing is (two or three passes for most data); in rationals where an intermediate float64 overflows."""
    terms = []
    try:
        while True:
            rest = math.fsum(np.concatenate([v, -np.array(terms)]))
            if rest == 0:
                return sum(map(Fraction, terms), Fraction(0))
            terms.append(rest)
    except OverflowError:
        return sum(map(Fraction, v.tolist()), Fraction(0))


def rational_rounded(exact, dtype):
    """Rational `exact` rounded to `dtype` (float16, bfloat16, float32, float64), to nearest with ties to even
    (overflow: an infinity)."""
    info = finfo(dtype)
    if exact == 0:
        return dtype.type(0.0)
    sign, magnitude = (-1 if exact < 0 else 1), abs(exact)
    e = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    while Fraction(2) ** e > magnitude:
        e -= 1
    while Fraction(2) ** (e + 1) <= magnitude:
        e += 1
    step = max(e - info.nmant, info.minexp - info.nmant)  # the unit in the last place at that binade
    value = Fraction(round(magnitude / Fraction(2) ** step)) * Fraction(2) ** step  # round(): half to even
    if value >= Fraction(2) ** info.maxexp:
        return dtype.type(sign * np.inf)
    return dtype.type(sign * float(value))


def _variant(kind, name):
    return next(v for v in _registry.variants(kind=kind) if v.name == name)


def _flat_call(kind, v, op, x, result_dtype, axis, initial, where):
    """Whether variant `v`'s flat kernel runs this call: a whole array of its dtypes in NumPy's result dtype, no
    initial= or where=, one of its flat operators (not mean, nansum, ...); else the axis kernels do."""
    whole = axis is None or x.ndim <= 1 or (kind == "reduce" and len(normalize_axis_tuple(axis, x.ndim)) == x.ndim)
    default = default_dtype(SCANS.get(op, op), x.dtype, _core.KIND_SCAN if kind == "scan" else _core.KIND_REDUCE)
    return whole and x.dtype.name in v.dtypes and result_dtype == default and initial is None and \
        where is True and SCANS.get(op, op) in v.ops


def exact_call(kind, variant, op, x, result_dtype, axis, initial, where):
    """Whether this call runs variant `variant`'s correctly rounded kernels (the "exact" property): a floating
    sum, mean or their nan forms (_registry.EXACT_OPS), whole or along axes, with where= and initial=, into the
    input's dtype or one that holds its elements exactly (float64, float32 of a half format: the elements are cast
    into it first)."""
    v = _variant(kind, variant)
    if kind == "scan":  # the exact cumsum: judged by the bound of its one rounding (its tests hold it to
        return False    # correctly_rounded_cumsum's bits)
    if not ("exact" in v.properties and op in _registry.EXACT_OPS and dtype_kind(x.dtype) in "fc"):
        return False
    result_dtype = np.dtype(result_dtype)
    if dtype_kind(x.dtype) == "c":  # each part its own exact sum (gpureduce/_planning/exact_complex.py)
        return result_dtype.kind == "c" and result_dtype.itemsize >= x.dtype.itemsize
    return result_dtype == x.dtype or result_dtype == np.float64 or \
        (result_dtype == np.float32 and x.dtype.itemsize == 2)


def exact_result(op, x, dtype, axis=None, where=True, initial=None):
    """The bits an exact_call of `op` (_registry.EXACT_OPS: sum, mean and their nan forms) on host array `x`
    gives, each slice along `axis` (None: the whole array) its own: correctly_rounded_sum of the elements `where`
    takes (and `initial`, one more element of a sum), divided by their count for a mean, of the elements that are
    not NaN for a nan form; of a complex `x`, each part's (a nan form drops an element where either part is NaN).
    An array of the result's shape without the reduced axes (0-d for a whole array)."""
    x = np.asarray(x)
    if x.dtype.kind == "c":  # each part's own, an element dropped by a nan form where either part is NaN
        dtype = np.dtype(dtype)
        part = COMPLEX_PART[dtype]
        if EXACT_OF[op] != op:
            where = ~np.isnan(x) & np.asarray(where, bool)
        start = (None, None) if initial is None else (complex(initial).real, complex(initial).imag)
        real = exact_result(EXACT_OF[op], x.real, part, axis, where, start[0])
        imag = exact_result(EXACT_OF[op], x.imag, part, axis, where, start[1])
        out = np.empty(real.shape, dtype)
        out.real, out.imag = real, imag
        return out
    axes = tuple(range(x.ndim)) if axis is None else normalize_axis_tuple(axis, x.ndim)
    kept = [i for i in range(x.ndim) if i not in axes]
    moved = np.moveaxis(x, kept + list(axes), list(range(x.ndim)))
    mask = None if where is True else np.moveaxis(np.broadcast_to(np.asarray(where, bool), x.shape),
                                                  kept + list(axes), list(range(x.ndim)))
    out = np.empty([x.shape[i] for i in kept], dtype)
    for index in np.ndindex(*out.shape):
        values = np.asarray(moved[index]).reshape(-1)
        if mask is not None:
            values = values[np.asarray(mask[index]).reshape(-1)]
        if EXACT_OF[op] != op:  # a nan form (nansum: sum's on the numbers)
            values = values[~np.isnan(values.astype(np.float32 if values.dtype.itemsize == 2 else values.dtype))]
        if initial is not None:  # (a NaN initial= makes even a nansum NaN, as NumPy's)
            values = np.concatenate([values, np.array([initial], x.dtype)])
        out[index] = correctly_rounded_sum(values, dtype,
                                           count=values.size if _RESULT_RULE[op] == "MEAN" else None)
    return out


def rounding_chain_of(kind, variant, op, x, result_dtype, axis, initial, where, n):
    """The variant's longest chain of roundings for this call: its flat kernel's for a whole array of its
    dtypes in NumPy's result dtype, else the axis kernels' (gpureduce/_accuracy.py)."""
    v = _variant(kind, variant)
    flat = _flat_call(kind, v, op, x, result_dtype, axis, initial, where)
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
    names = [v.name for v in _registry.variants(kind=kind)]
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
    kind = kind_of(op)
    _check_variant(kind, variant)
    if exact_call(kind, variant, op, np.asarray(to_numpy(x)), result_dtype, axis, initial, where):
        # one rounding of each slice's exact sum: exact_result's bits exactly
        return np.zeros(_result_shape(op, np.shape(x), axis, keepdims))
    if op in _OWN_BOUND:
        raise ValueError(f"error_bound has no bound for {op}: its error depends on its own argument (ddof, ord) and "
                         f"on the data's spread; assert_matches_numpy checks {op} against a bound of its own")
    x = to_numpy(x)
    where = to_numpy(where) if is_device_array(where) else where
    result_dtype = np.dtype(result_dtype)
    if op not in SUM_LIKE + PROD_LIKE + LOG_LIKE or dtype_kind(result_dtype) not in "fc":
        return np.zeros(_result_shape(op, x.shape, axis, keepdims))
    wide = wide_dtype(x.dtype, result_dtype)
    if reference is None:
        reference = wide_reference(op, x, wide, axis, keepdims, initial, where, exclusive)
    abs_ref = np.abs(np.asarray(reference))
    abs_x = np.abs(x.astype(wide))
    if op in _SKIPS_NAN:
        numbers = ~np.isnan(abs_x)
        abs_x = np.where(numbers, abs_x, 0.0)
        where = np.broadcast_to(where, x.shape) & numbers
    # `scale`: what the accumulated rounding errors are proportional to, per output element
    if op in LOG_LIKE:  # each step's rounding is relative to |running value| + 1 (log1p of a sum of exps)
        if kind == "scan":
            scanned, ax = scan_view(x, axis)
            n = scanned.shape[ax]
        else:
            n = _reduced_count(x.shape, axis)
        scale = np.where(np.isfinite(abs_ref), abs_ref, 0.0) + 1.0
    elif kind == "scan":
        abs_x, ax = scan_view(abs_x, axis)
        n = abs_x.shape[ax]
        if op in ("cumsum", "nancumsum"):
            scale = np.cumsum(abs_x, axis=ax)
            if exclusive:
                scale = shift_exclusive(scale, ax, 0.0)
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
    chain = rounding_chain_of(kind, variant, op, x, result_dtype, axis, initial, where, n)
    depth = max(SLACK * math.log2(max(n, 2)), CHAIN_SLACK * math.sqrt(chain))
    accumulated = depth * _work_eps(x.dtype, result_dtype) * scale
    final_rounding = float(finfo(result_dtype).eps) * abs_ref
    floor = 4.0 * float(finfo(result_dtype).smallest_subnormal)
    return np.asarray(accumulated + final_rounding + floor, dtype=np.float64)
