"""Reductions and scans of Dask arrays, gpureduce's kernels doing the work on every chunk.

``gpureduce.dask.sum(x, axis=0)`` takes a ``dask.array.Array`` whose chunks are NumPy or CuPy arrays and
returns a lazy ``dask.array.Array``, NumPy's signature and result dtype, built on Dask's own machinery:

* sum, prod, min, max, any, all: ``dask.array.reduction`` with gpureduce's function on each chunk and on the
  partial results (chunk -> combine -> aggregate); count_nonzero: each chunk's count, the counts summed;
* mean: each chunk gives its count and its sum in the accumulator dtype NumPy uses (float64 for integers and
  bool, the input's own for floats), summed over the partials and divided once at the end;
* argmin, argmax: each chunk gives its extreme value and the global index of its first occurrence; the
  partials are combined in block order, so ties and NaNs resolve to the first one, as NumPy's do;
* vector_norm: each chunk's norm, then the norm of those norms with the same order (ord 0's counts added);
* ptp: each chunk's minimum and maximum (two kernel calls: gpureduce.ptp gives only their difference), the
  minima's minimum and the maxima's maximum, subtracted once at the end (integers wrap, as NumPy's);
* logsumexp: each chunk's logsumexp in float64, which is the pair (m, sum of exp(x - m)) folded into one number
  m + log(sum); the partials' logsumexp (the same kernel, shifted by their largest) gives the result;
* var, std, nanvar, nanstd (gpureduce/dask/moments.py): each chunk's count, mean and sum of squared
  deviations M2 in float64, merged pairwise with Chan et al.'s formula; ddof is applied once at the end;
* nansum, nanprod, nanmin, nanmax, nanmean, nanargmin, nanargmax (gpureduce/dask/nan.py): gpureduce's nan
  kernels on each chunk; nanmin and nanmax carry whether a slice has a number (an all-NaN slice gives NaN and
  one "All-NaN slice encountered" warning, at the end), nanmean the count of numbers and their sum,
  nanargmin and nanargmax NaN for a chunk's slice without a number, which never wins;
* cumsum, cumprod, cummax, cummin, nancumsum, nancumprod, logcumsumexp (gpureduce/dask/scans.py): gpureduce scans
  each chunk where it is; the chunks' last slices, folded in block order by one small task, give each chunk its
  carry, which is folded into it where it is (added, multiplied, the larger or smaller taken, ``numpy.logaddexp``;
  a large host block on several threads): no chunk moves between workers.

* variant="exact" of sum, nansum, mean and nanmean (gpureduce/dask/exact.py): each chunk's exact sums kept
  exactly as a few float64 terms, the partials' terms summed exactly again, the result rounded once: the eager
  exact call's bits under any chunking; cumsum and nancumsum (gpureduce/dask/exact_scans.py): each block's exact
  scan from the exact sum of the blocks before it, put before the block as a few elements of its dtype.

Integer and bool inputs hold no NaN: a nan function of them is the plain one, as NumPy's.  The tree of partial
results is fixed by the chunks and ``split_every``, never by scheduling, so the result is the same run after run
(by default one task combines every chunk's partial, while they number at most 1,024 and fit 64 MiB: one level of
tree, the fewest tasks and waits; else about the square root of their count a task, two levels); floats differ
from a single call of gpureduce or NumPy by the roundings of that tree, within ``gpureduce.testing.error_bound`` of
the exact result.  ``gpureduce.sum(x)`` & co. of a Dask array return this module's lazy result.

Many GPUs: run one Dask worker per GPU (``local_cluster()``, gpureduce/dask/cluster.py: dask-cuda's
``LocalCUDACluster`` where it is installed, else one ``distributed`` nanny per GPU with its own
``CUDA_VISIBLE_DEVICES``) and persist the array on the workers; each chunk is reduced on the GPU of the worker
that holds it.  Needs ``pip install gpureduce[dask]``.
"""
from __future__ import annotations

try:
    import dask.array  # noqa: F401  (what every module below builds on)
except ImportError as e:  # pragma: no cover - the message is the point
    raise ImportError("gpureduce.dask needs Dask: pip install 'gpureduce[dask]' (or 'dask[array]')") from e

from .. import _registry
from .._planning.numpy_rules import NoValue
from .cluster import local_cluster
from .moments import nanstd, nanvar, std, var
from .nan import nanargmax, nanargmin, nancumprod, nancumsum, nanmax, nanmean, nanmin, nanprod, nansum
from .plain import (all, any, argmax, argmin, count_nonzero, cummax, cummin, cumprod, cumsum, logcumsumexp, logsumexp,
                    max, mean, min, prod, ptp, sum, vector_norm)

# Every reduction and scan of this module, in the order of cuda/abi/ops.def (gpureduce.<name> of a Dask array hands
# the call to the one named here; an operator this module has no function for refuses Dask arrays clearly)
_FUNCTIONS = {name: globals()[name] for name in [op.name for op in _registry.OPERATORS] + list(_registry.SCAN_FUNCTIONS)
              if name in globals()}
OPERATORS = list(_FUNCTIONS)
__all__ = OPERATORS + ["local_cluster"]


# ---------------------------------------------------------------- gpureduce.sum(dask_array) & co: lazy, as numpy's

def reduce_lazily(op, a, axis, dtype, out, keepdims, initial, where, variant, ord=None, ddof=None):
    """gpureduce.reduce(op, a, ...) of a Dask array: the lazy result of this module's function."""
    if where is not True:
        raise TypeError("where= is not supported for Dask arrays (gpureduce.dask); mask the array first "
                        "(dask.array.where) or reduce a NumPy or device array")
    if op not in OPERATORS:
        raise TypeError(f"gpureduce.{op} does not take Dask arrays yet; gpureduce.dask has {', '.join(OPERATORS)}")
    options = {"axis": axis, "keepdims": keepdims, "variant": variant}
    if out is not None:
        options["out"] = out
    if dtype is not None:
        options["dtype"] = dtype
    if initial is not NoValue and initial is not None:
        options["initial"] = initial
    if ord is not None:
        options["ord"] = ord
    if ddof is not None:
        options["ddof"] = ddof
    return _FUNCTIONS[op](a, **options)


def scan_lazily(op, a, axis, dtype, out, exclusive, variant):
    """gpureduce.scan(op, a, ...) of a Dask array: the lazy result of this module's function."""
    if exclusive:
        raise TypeError("exclusive=True is not supported for Dask arrays (gpureduce.dask)")
    if op not in _registry.SCAN_OPS:
        raise ValueError(f"unknown operator {op!r}; operators are {', '.join(_registry.SCAN_OPS)}")
    name = _registry.scan_function_name(op)  # sum: cumsum, nansum: nancumsum, logsumexp: logcumsumexp
    options = {"axis": axis, "out": out, "variant": variant}
    if dtype is not None:
        options["dtype"] = dtype
    return _FUNCTIONS[name](a, **options)

