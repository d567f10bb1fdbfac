"""The scans of Dask arrays (cumsum, cumprod, cummax, cummin, nancumsum, nancumprod, logcumsumexp): each block
scanned by gpureduce on the worker that holds it, then the running result of the blocks before folded into it.

The graph (``block_scan``), for each line of blocks along the scan axis:

* ``scan``: each block's own scan (a gpureduce kernel; the block stays where it is);
* ``tail``: each block's last slice along the axis, a task of its own on the block's worker, so that only those
  slices (a number each in 1-d) leave it;
* ``carries``: one task that folds the tails in block order into the carry of every block after the first;
* the result: each block's scan with its carry folded in (added, multiplied, the larger or smaller taken,
  ``numpy.logaddexp``), again on the block's worker; the first block's scan is its result.

The fold writes into a NumPy block's scan, which becomes the result: no second array a block, so a scan holds
its input and its result at most, as numpy.cumsum does (a new array a fold held the input, every scan and every
result at once, since no fold can start before the carries task, which waits for every tail: 3x the input, and a
fresh 512 MiB allocation a block: 8.9 s for 16 GiB on one H200's worker, where Dask's chain of carries took 2.1 s).
That is safe because the scan's output belongs to the graph alone (``_owned_scan``: a kernel returning its
input, or a view of it, is copied) and its only other reader, the tail, has been read before: every fold depends on
the carries task, which depends on every tail; a fold task run again after a lost worker finds its scan lost with it and recomputed.  A CuPy
block's fold still makes a new array (in place not yet run on a GPU).

Dask's own ``cumreduction`` chains the carries block after block, each link a task reading the whole block before
it: a chain of as many dependent tasks as blocks, crossing between workers as the blocks do.  Here no block moves
and the carries are one task.  The folds are done in the block order of the chain before, so the result is the
same bits, run after run and whatever the scheduling; float16 and bfloat16 are carried in float32 and rounded once.
An exact variant's floating cumsum and nancumsum carry exact sums instead (exact_scans.py).
"""
from __future__ import annotations

import concurrent.futures
import operator
import os
from functools import partial
from itertools import product

import numpy as np
import dask.array as da
from dask.array.core import handle_out
from dask.array.utils import validate_axis
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from .. import _registry
from .._planning.operands import dtype_kind
from .._planning.plan import is_exact_variant, variant_for
from . import chunks
from .chunks import carried_dtype, checked_array, kernel_options
from .exact_scans import EXACT_SCANS, exact_scan

# the scans that take dtype= (those of the operators whose NumPy function takes it: ops.def)
_DTYPED_SCANS = {_registry.scan_function_name(op.name) for op in _registry.OPERATORS if op.scans and "dtype" in op.keywords}

# the step that folds the blocks before into a block (a nan scan's carry holds no NaN of an element: only one of
# the data's own, inf - inf, which stays, as NumPy's)
_FOLDS = {"cumsum": np.add, "cumprod": np.multiply, "nancumsum": np.add, "nancumprod": np.multiply,
          "cummax": np.maximum, "cummin": np.minimum, "logcumsumexp": np.logaddexp}


def _kernel_scan(op, variant, x, axis=None, dtype=None, cast=False):
    """`op` of one block, in `dtype` (dtype= where `op` takes it, else the block `cast` to it first)."""
    options = kernel_options(variant)
    if dtype is not None and op in _DTYPED_SCANS:
        options["dtype"] = dtype
    elif cast:
        x = x.astype(dtype)
    return getattr(chunks.kernels, op)(x, axis=axis, **options)


def _check_scan_variant(op, variant):
    """An unknown variant, or one that does not scan `op`: gpureduce's ValueError naming the choices, here, not at
    compute()."""
    if variant != "auto":
        variant_for("scan", _registry.SCAN_FUNCTIONS[op], variant)


def _result_dtype(op, a_dtype, dtype):
    """NumPy's result dtype of scan `op` over `a_dtype` (with dtype= where `op` takes it)."""
    if op in _DTYPED_SCANS:
        return getattr(np, op)(np.ones((1,), a_dtype), dtype=dtype).dtype
    if op == "logcumsumexp":
        if a_dtype.kind == "c":
            raise TypeError(f"unsupported dtype {a_dtype} of the Dask array: logsumexp has no kernel for it "
                            "(gpureduce.logcumsumexp takes real inputs)")
        return a_dtype if dtype_kind(a_dtype) == "f" else np.dtype(np.float64)
    return a_dtype


def block_scan(op, a, axis, dtype, out, variant):
    a = checked_array(a)
    _check_scan_variant(op, variant)
    result_dtype = _result_dtype(op, a.dtype, dtype)
    if op in EXACT_SCANS and is_exact_variant(variant) and dtype_kind(result_dtype) in "fc":
        # a floating or complex cumsum under an exact variant: exact carries (exact_scans.py); the input cast to
        # dtype= first, as the eager exact scan's
        if a.dtype.kind == "c" and dtype_kind(result_dtype) != "c":  # a real dtype= (NumPy warned above)
            a = da.real(da.where(da.isnan(a), 0, a) if op == "nancumsum" else a)  # NaN elements zeroed first
        a = a if a.dtype == result_dtype else a.astype(result_dtype)
        a, axis = _flattened(a) if axis is None else (a, validate_axis(operator.index(axis), a.ndim))
        return handle_out(out, exact_scan(op, a, axis, variant))
    # a half dtype's scan carried in float32 and rounded once at the end (carried_dtype); a running extreme rounds
    # nothing
    carry_dtype = result_dtype if op in ("cummax", "cummin") else \
        carried_dtype(result_dtype, _registry.SCAN_FUNCTIONS[op], variant, kind="scan")
    if axis is None:
        a, axis = _flattened(a)
    else:
        axis = validate_axis(operator.index(axis), a.ndim)  # NumPy's TypeError for a tuple or a float
    func = partial(_kernel_scan, op, variant, dtype=carry_dtype, cast=carry_dtype != result_dtype)
    scanned = _carried_scan(op, func, _FOLDS[op], a, axis, carry_dtype)
    return handle_out(out, scanned if carry_dtype == result_dtype else scanned.astype(result_dtype))


def _flattened(a):
    """(a flattened in C order, 0), keeping about as many blocks as `a` has: Dask 2026.8's own flattening for a
    scan rechunks to chunks of `npartitions` elements (15 elements a chunk for 15 blocks), a graph whose ordering
    alone takes about a minute for 10^6 elements.  Its ravel fails on chunks of no extent: dropped first."""
    if a.ndim > 1 and any(0 in sizes for sizes in a.chunks):
        a = a.rechunk(tuple(tuple(c for c in sizes if c) or (0,) for sizes in a.chunks))
    return a.ravel(), 0


def _carried_scan(op, func, ufunc, a, axis, dtype):
    """The graph of the module's documentation: `func` scans a block along `axis` into `dtype`, `ufunc` folds."""
    scans = a.map_blocks(partial(_owned_scan, func), axis=axis, dtype=dtype)
    token = tokenize(op, func, ufunc, axis, a, dtype)
    name, tail, carries = f"{op}-{token}", f"{op}-tail-{token}", f"{op}-carries-{token}"
    n = a.numblocks[axis]
    last = (slice(None),) * axis + (slice(-1, None),) + (slice(None),) * (a.ndim - axis - 1)
    fold = partial(_fold, ufunc)
    dsk = {}
    for line in product(*[range(nb) if i != axis else [0] for i, nb in enumerate(a.numblocks)]):
        def at(k):
            return line[:axis] + (k,) + line[axis + 1:]
        dsk[(name,) + at(0)] = (scans.name,) + at(0)
        if n == 1:
            continue
        for k in range(n - 1):
            dsk[(tail,) + at(k)] = (operator.getitem, (scans.name,) + at(k), last)
        dsk[(carries,) + line] = (partial(_running_folds, ufunc),) + tuple((tail,) + at(k) for k in range(n - 1))
        for k in range(1, n):
            dsk[(name,) + at(k)] = (fold, (operator.getitem, (carries,) + line, k - 1), (scans.name,) + at(k))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[scans])
    return da.Array(graph, name, a.chunks, dtype=scans.dtype, meta=scans._meta)


def _owned_scan(func, block, **options):
    """func(block) in an array of its own: the fold writes into it (a kernel that returned its input or a view of
    it, as a stand-in may, is copied)."""
    scanned = func(block, **options)
    if scanned is block or _may_share_memory(scanned, block):
        scanned = scanned.copy()
    return scanned


def _may_share_memory(x, y):
    if type(x) is np.ndarray and type(y) is np.ndarray:
        return np.may_share_memory(x, y)
    xm, ym = getattr(type(x), "__module__", ""), getattr(type(y), "__module__", "")
    if xm.startswith("cupy") and ym.startswith("cupy"):
        import cupy
        return cupy.may_share_memory(x, y)
    return False


def _running_folds(ufunc, *tails):
    """The carry into each block after the first: the first block's tail, then each later tail folded into the
    carry before it (NumPy's running order: -0.0 stays -0.0, as numpy.cumsum keeps it).  An empty block (a boolean
    index's chunk without an element, say) has an empty tail and passes the carry on; None before any element."""
    carries, carry = [], None
    for t in tails:
        if t.size:
            carry = t if carry is None else _fold_slice(ufunc, carry, t)
        carries.append(carry)
    return carries


# A host block at least this large has its carry folded in on several threads (NumPy's ufuncs release the GIL):
# the fold reads and writes the whole block in host memory, which one thread does at a fraction of the memory's
# bandwidth, about 7 GB/s, seven times slower than the GPU's scan of the same block.
_PARALLEL_FOLD_BYTES = 32 << 20


_FOLD_THREADS = 8


_fold_pool = None


def _fold(ufunc, carry, block):
    """ufunc(carry, block): the running result of the blocks before (length 1 along the scan axis; None where they
    are empty) folded into a scanned block, in place where the block can take it (the module's notes say why that
    is safe); a large NumPy block in slices on up to _FOLD_THREADS threads."""
    if carry is None:  # only empty blocks before this one
        return block
    in_place = np.result_type(carry, block) == block.dtype and \
        getattr(getattr(block, "flags", None), "writeable", False)
    threads = min(_FOLD_THREADS, os.cpu_count() or 1)
    along = [d for d in range(block.ndim) if np.ndim(carry) == block.ndim and np.shape(carry)[d] == 1]
    if (type(block) is not np.ndarray or block.nbytes < _PARALLEL_FOLD_BYTES or threads < 2 or not along
            or not in_place):
        return _fold_slice(ufunc, carry, block, block if in_place else None)
    d = max(along, key=lambda k: block.shape[k])  # slices along a dimension the carry is broadcast over
    if block.shape[d] < threads:
        return _fold_slice(ufunc, carry, block, block)
    global _fold_pool
    if _fold_pool is None:
        _fold_pool = concurrent.futures.ThreadPoolExecutor(_FOLD_THREADS, thread_name_prefix="gpureduce-fold")
    bounds = np.linspace(0, block.shape[d], threads + 1).astype(int)
    pieces = [(slice(None),) * d + (slice(lo, hi),) for lo, hi in zip(bounds[:-1], bounds[1:])]
    for done in [_fold_pool.submit(_fold_slice, ufunc, carry, block[p], block[p]) for p in pieces]:
        done.result()
    return block


def _fold_slice(ufunc, carry, block, out=None):
    with np.errstate(invalid="ignore"):  # logaddexp of a NaN: NumPy warns, the kernels propagate it silently
        return ufunc(carry, block) if out is None else ufunc(carry, block, out=out)
