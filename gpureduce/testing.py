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
* A variant with the "exact" property (``variant="exact"``) on a call its kernels run (the sum, mean, nansum or
  nanmean of a float16, bfloat16, float32 or float64 array, whole or along axes, with ``where=`` and
  ``initial=``, in the input's dtype or one that holds its elements exactly) is held to zero ulps: each
  result's bits must be those of the exact real sum of its slice (of the elements that are not NaN for the nan
  forms; divided by their count for a mean) rounded once
  (``_bounds.correctly_rounded_sum``: the exact sum from ``math.fsum``'s passes, rounded once).

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

import inspect
import math

import numpy as np

import gpureduce

from ._bounds import (CHAIN_SLACK, LOG_LIKE, NUMPY_FUNCTIONS, PROD_LIKE, REDUCTIONS, SCANS, SLACK, SUM_LIKE,
                      error_bound, exact_call, exact_result, is_device_array, kind_of, quiet,
                      rounding_chain_of, same_exact_result, scan_identity, scan_view, shift_exclusive, to_numpy,
                      wide_dtype, wide_reference)
from ._planning.operands import BFLOAT16, dtype_kind, finfo, intake, is_dask_array
from ._registry import DTYPE_NAMES

__all__ = ["CHAIN_SLACK", "SLACK", "assert_matches_numpy", "error_bound", "for_all_dtypes", "for_all_variants",
           "to_numpy"]


_DTYPE_KINDS = "biufc"


# ---------------------------------------------------------------- the comparison


def _summary(value):
    if isinstance(value, np.ndarray) or is_device_array(value):
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
        with quiet():
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
    kind = kind_of(op)
    function = getattr(gpureduce, op)
    host_x = to_numpy(x)
    what = _describe(op, variant, host_x, args, kwargs)
    exclusive = kind == "scan" and bool(kwargs.get("exclusive", False))
    numpy_args = [to_numpy(a) if is_device_array(a) else a for a in args]
    numpy_kwargs = {k: to_numpy(v) if is_device_array(v) else v for k, v in kwargs.items()
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
        with quiet():
            expected = NUMPY_FUNCTIONS[op](numpy_x, *numpy_args, **numpy_kwargs)
    except Exception as numpy_error:  # noqa: BLE001 - whatever NumPy raises is the reference
        _expect_same_error(call_gpureduce, numpy_error, what)
        return None
    expected = np.array(expected)  # a copy: gpureduce may write a positional out= that NumPy returned
    # the arguments by name, as the NumPy call that just succeeded took them (only those given)
    named = inspect.signature(NUMPY_FUNCTIONS[op]).bind(host_x, *numpy_args, **numpy_kwargs).arguments
    if numpy_x is not host_x and expected.dtype == np.float32 and named.get("dtype") is None and out is None:
        expected = expected.astype(BFLOAT16)
    axis = named.get("axis")
    if exclusive:
        expected, ax = scan_view(expected, axis)
        expected = shift_exclusive(expected, ax, scan_identity(op, expected.dtype))
    try:
        with quiet():
            result = call_gpureduce()
    except Exception as error:
        raise AssertionError(f"{what}: gpureduce raises {type(error).__name__} ({error}); NumPy returns a "
                             f"{expected.dtype} result of shape {expected.shape}") from error

    if out is not None and result is not out:
        raise AssertionError(f"{what}: returned a {type(result).__name__}, not the out= array")
    if out is None and expected.ndim == 0:
        on_device = is_device_array(x) and not intake(x).host  # (a DLPack exporter may hold host memory)
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
    if exact_call(kind, variant, op, host_x, expected.dtype, axis, named.get("initial"), named.get("where", True)):
        where = named.get("where", True)
        exact = exact_result(op, host_x, expected.dtype, axis, to_numpy(where) if is_device_array(where) else where,
                             named.get("initial")).reshape(got.shape)  # the bits "exact" must give, -0.0 too
        if not same_exact_result(got, exact):
            differ = np.flatnonzero(np.asarray((got != exact) & ~(np.isnan(got) & np.isnan(exact))).reshape(-1))
            at = tuple(int(i) for i in np.unravel_index(int(differ[0]), got.shape)) if differ.size and got.ndim \
                else ()  # the first value that differs (else a zero's sign)
            raise AssertionError(f"{what}: got {got[at]!r} at {at}, the correctly rounded exact {op} is "
                                 f"{exact[at]!r} (variant {variant!r} promises its bits)")
        return result
    if op in SUM_LIKE + PROD_LIKE + LOG_LIKE and dtype_kind(expected.dtype) in "fc":
        where = named.get("where", True)
        extra = dict(keepdims=bool(named.get("keepdims", False)), initial=named.get("initial"), where=where,
                     exclusive=exclusive)
        wide = wide_dtype(host_x.dtype, expected.dtype)
        reference = wide_reference(op, host_x, wide, axis, **extra)
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
    with quiet():
        reference = np.asarray(np.linalg.vector_norm(wide, **options))
    n = x.size if reference.size == 0 else max(x.size // reference.size, 1)
    power = 1.0 if order in (0.0, math.inf, -math.inf) else max(1.0, 1.0 / abs(order))
    axis = options.get("axis")
    depth = max(SLACK * math.log2(max(n, 2)), rounding_chain_of("reduce", variant, "vector_norm", x, result_dtype, axis, None,
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
    with quiet():
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
    if kind_of(op) == "scan" and kind == "reduce":
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
        "max") or a function's name ("cumsum", "mean", "argmax", ...; argmin and argmax select the
        variants with the "axes" property, mean those and exact).
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
