"""variant="exact" cumsum and nancumsum of Dask arrays (issue 41): every element its exact prefix sum rounded once,
the same bits as the eager exact scan under any chunking (of a complex array, each part's).

A block's scan must start from the exact sum of the blocks before it along the axis (its carry), which cannot
travel as one float: its rounding would be added to every element after.  The graph, for each line of blocks
along the axis:

* ``terms``: each block but the last, its exact sums along the axis as float64 terms (exact.py's ``exact_terms``)
  and whether every element is -0.0: a few numbers a line, on the block's worker;
* ``carries``: one task that sums them exactly in block order (``exact_terms`` again) into each later block's
  carry, and writes each carry as a few elements of the block's dtype whose exact sum it is (``carry_elements``);
* the result: the eager exact scan of the block with its carry's elements put before it along the axis, those
  first elements dropped.  Each element's prefix is then the carry and the block's elements up to it: the exact
  prefix, rounded once by the kernel; -0.0 where the carry is -0.0 (every element before was) and the block's
  elements up to it are.  The first block's result is its own exact scan.

NaN and infinities pass through the carry as one element.  A carry past the dtype's range takes as many of its
largest power of two as it holds (a float16 running sum past 65504: one element each 32768), up to 2^22 a block
(a 1-d float16 array: a carry of 1.4e11); beyond, OverflowError, as a float64 carry beyond float64's range
(exact_terms): the eager exact scan of the array computed whole has no such limit.
"""
from __future__ import annotations

from functools import partial
from itertools import product

import numpy as np
import dask.array as da
from dask.base import tokenize
from dask.highlevelgraph import HighLevelGraph

from .._planning.libraries import library_of
from .._planning.operands import BFLOAT16, to_host
from .._planning.results import host_in_kind_of
from . import chunks
from .exact import MOST_TERMS, exact_terms, joined_parts

EXACT_SCANS = ("cumsum", "nancumsum")
_MOST_CARRY_ELEMENTS = 64  # elements a line's carry may take beyond its largest powers of two (a few: 53-bit terms)
_CARRY_ELEMENTS_A_CALL = 1 << 22  # the largest powers of two all of a block's lines' carries may take together


def exact_scan(op, a, axis, variant):
    """`op` (cumsum or nancumsum) of Dask array `a` along `axis` (an int: the caller flattened axis=None) under an
    exact variant, in `a`'s dtype (a floating or complex one: the caller cast it to dtype= first)."""
    if a.dtype.kind == "c":
        if op == "nancumsum":  # an element with a NaN part counts as 0 in both parts, as NumPy's
            a = da.where(da.isnan(a), a.dtype.type(0), a)
        real, imag = (exact_scan("cumsum", part, axis, variant) for part in (a.real, a.imag))
        return da.map_blocks(joined_parts, real, imag, dtype=a.dtype)
    most = MOST_TERMS[a.dtype == np.float64]
    nan = op == "nancumsum"
    token = tokenize("exact-scan", op, a, axis, variant)
    name, terms, carries = f"{op}-exact-{token}", f"{op}-exact-terms-{token}", f"{op}-exact-carries-{token}"
    n = a.numblocks[axis]
    dsk = {}
    for line in product(*[range(nb) if i != axis else [0] for i, nb in enumerate(a.numblocks)]):
        def at(k):
            return line[:axis] + (k,) + line[axis + 1:]
        dsk[(name,) + at(0)] = (partial(_scan_block, op, axis, variant), None, (a.name,) + at(0))
        for k in range(n - 1):
            dsk[(terms,) + at(k)] = (partial(block_terms, variant, most, nan, axis), (a.name,) + at(k))
        if n > 1:
            dsk[(carries,) + line] = (partial(carry_elements, variant, most, a.dtype),) + \
                tuple((terms,) + at(k) for k in range(n - 1))
        for k in range(1, n):
            dsk[(name,) + at(k)] = (partial(_scan_block, op, axis, variant),
                                    (_nth, (carries,) + line, k - 1), (a.name,) + at(k))
    graph = HighLevelGraph.from_collections(name, dsk, dependencies=[a])
    return da.Array(graph, name, a.chunks, dtype=a.dtype, meta=a._meta)


def block_terms(variant, most, nan, axis, block):
    """A block's partial: {"terms": its exact sums along `axis` as float64 terms (the other axes', then the
    terms'), "negative_zero": where every element along `axis` is -0.0}, on the host (a few numbers a line).  A
    nan form's NaN counts as +0.0."""
    rows = np.moveaxis(block, axis, -1)
    wide = rows.astype(np.float64)
    if nan:
        wide = np.where(np.isnan(wide), 0.0, wide)
    negative_zero = ((wide == 0) & np.signbit(wide)).all(axis=-1)
    return {"terms": np.asarray(to_host(exact_terms(wide, variant, most))),
            "negative_zero": np.asarray(to_host(negative_zero))}


def carry_elements(variant, most, dtype, *parts):
    """Each later block's carry (the exact sum of every block before it), as elements of `dtype` along a last
    axis: a list, one array a block after the first."""
    running, negative_zero, out = None, None, []
    for part in parts:
        terms = part["terms"] if running is None else np.concatenate([running, part["terms"]], axis=-1)
        running = exact_terms(terms, variant, most)
        negative_zero = part["negative_zero"] if negative_zero is None else negative_zero & part["negative_zero"]
        out.append(_elements(running, negative_zero, dtype))
    return out


def _elements(terms, negative_zero, dtype):
    """Elements of `dtype` (last axis) whose exact sum is each line's sum of float64 `terms` (a NaN or an infinity:
    that value alone), -0.0 where `negative_zero`.  First as many of the dtype's largest power of two as the
    leading term holds (a float16 running sum past 65504), then each pass the rest rounded to `dtype`, which
    leaves the rest exact in float64: the terms of `dtype`'s sums are multiples of its smallest subnormal, as is
    every rest."""
    info = _finfo(dtype)
    largest = float(np.ldexp(1.0, info.maxexp - 1))  # the largest power of two of the dtype
    finite = np.isfinite(terms[..., 0])
    first = np.where(finite, 0.0, terms[..., 0])  # NaN or an infinity: the first element, nothing after
    rest = np.where(finite[..., None], terms, 0.0)
    first_term, lead = _leading(rest)
    many = np.trunc(lead / largest)  # whole largest powers of two in the leading term (exactly: a power of two)
    count = int(np.abs(many).max(initial=0))
    if count > max(_MOST_CARRY_ELEMENTS, _CARRY_ELEMENTS_A_CALL // max(many.size, 1)):
        raise OverflowError(f"variant 'exact' of a Dask array's cumsum: the exact sum of the blocks before one is "
                            f"{count} times {np.dtype(dtype)}'s largest power of two, more elements than a block can "
                            "be given; compute the array into one NumPy or device array first")
    columns = [first.astype(dtype)]
    if count:
        below = np.arange(count) < np.abs(many)[..., None]
        columns += list(np.moveaxis(np.where(below, np.copysign(largest, many)[..., None], 0.0).astype(dtype), -1, 0))
        rest = _subtract(rest, first_term, many * largest)  # exact: a multiple of the term's unit, below `largest`
    for _ in range(_MOST_CARRY_ELEMENTS):
        if not (rest != 0).any():
            break
        first_term, lead = _leading(rest)
        element = np.clip(lead, -largest, largest).astype(dtype)
        rest = _subtract(rest, first_term, element.astype(np.float64))
        columns.append(element)
    else:
        if (rest != 0).any():
            raise RuntimeError(f"variant 'exact' of a Dask array's cumsum: a carry needed more than "
                               f"{_MOST_CARRY_ELEMENTS} elements of {np.dtype(dtype)} below its largest power of two")
    elements = np.stack(columns, axis=-1)
    return np.where(negative_zero[..., None], np.array(-0.0, dtype), elements)


def _leading(rest):
    """(the index, the value) of each line's largest term in magnitude (the terms are exact_terms': the first is
    the sum rounded, the rest each far smaller, so the first nonzero one leads)."""
    first = np.argmax(rest != 0, axis=-1)[..., None]
    return first, np.take_along_axis(rest, first, axis=-1)[..., 0]


def _subtract(rest, first, element):
    """The terms `rest` less `element` from their leading term at `first` (exact: the element is that term
    rounded, or the dtype's largest power of two below it)."""
    out = rest.copy()
    np.put_along_axis(out, first, np.take_along_axis(rest, first, axis=-1) - element[..., None], axis=-1)
    return out


def _finfo(dtype):
    import ml_dtypes
    return ml_dtypes.finfo(dtype) if np.dtype(dtype) == BFLOAT16 else np.finfo(dtype)


def _nth(items, k):
    return items[k]


def _scan_block(op, axis, variant, elements, block):
    """The exact scan of `block` along `axis`, from the carry's `elements` (None: from zero)."""
    scan = getattr(chunks.kernels, op)
    if elements is None:
        return scan(block, axis=axis, **chunks.kernel_options(variant))
    ahead = host_in_kind_of(block, np.moveaxis(elements, -1, axis))
    lib = library_of(block, "gpureduce.dask's exact cumsum", "it puts the carry before the block in the block's own "
                     "library")
    joined = lib.concatenate([ahead, block], axis)
    scanned = scan(joined, axis=axis, **chunks.kernel_options(variant))
    return scanned[(slice(None),) * axis + (slice(elements.shape[-1], None),)]
