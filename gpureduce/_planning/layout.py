"""Axis merging: an n-d reduction or scan over any strided layout -> the segment form of the kernels.

The kernels (cuda/axis/segments.cuh, cuda/axis/scan_segments.cuh) take at most two kept dimensions (i0, i1) and one
reduced dimension r, each with an element stride for the input, the where= mask and the output
(``gr_segments`` in cuda/abi/gpureduce.h).  This module folds an array's axes into that form:

* size-1 axes carry nothing and are dropped;
* neighbouring kept axes merge when every operand steps through them as through one axis
  (``stride[i] == stride[i + 1] * extent[i + 1]``), so a C- or Fortran-ordered kept block is one dimension;
* reduced axes merge the same way, after sorting them by stride (a sum does not care about order), except
  for argmin/argmax over several axes, whose position must count in C order.

Layouts that still need more dimensions (a reduction over axes 0 and 2 of a 3-d array, a sliced transposed
view...) return ``None``: the caller gathers the input into a contiguous order first (one strided copy) and
plans again.  Pure Python, no device: tested on the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from math import prod


@dataclass(frozen=True)
class Dim:
    extent: int
    strides: tuple  # one element stride per operand (input, mask, output), 0 where an operand is absent


@dataclass(frozen=True)
class Segments:
    """The kernels' problem: ``out[i0, i1] = op over r of in[i0, i1, r]`` with element strides."""

    count: tuple  # (c0, c1)
    in_strides: tuple  # (is0, is1)
    out_strides: tuple  # (os0, os1)
    mask_strides: tuple  # (ms0, ms1)
    reduce_count: int
    reduce_in_stride: int
    reduce_out_stride: int  # scans only
    reduce_mask_stride: int

    def as_tuple(self):
        """The 12 ints of a plan's layout, in the order src/plan.c reads them (_core.SEGMENT_FIELDS)."""
        return (*self.count, *self.in_strides, self.reduce_in_stride, *self.out_strides, self.reduce_out_stride,
                *self.mask_strides, self.reduce_mask_stride, self.reduce_count)


def c_strides(shape):
    """Element strides of a C-ordered array of `shape`."""
    strides, step = [], 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def merge(dims):
    """Merge neighbours that every operand walks as one axis; `dims` in order, outermost first."""
    merged = []
    for d in dims:
        if merged:
            outer = merged[-1]
            if all(so == si * d.extent for so, si in zip(outer.strides, d.strides)):
                merged[-1] = Dim(outer.extent * d.extent, d.strides)
                continue
        merged.append(d)
    return merged


def split_axes(shape, strides_per_operand, reduced, *, ordered=False):
    """(kept dims, reduced dims), size-1 axes dropped, neighbours merged.

    strides_per_operand: one tuple of per-axis strides for each operand (input, mask, ...), kept-axis output
    strides included as an operand whose reduced-axis strides are 0.
    """
    kept, red = [], []
    for axis, extent in enumerate(shape):
        if extent == 1:
            continue
        d = Dim(extent, tuple(s[axis] for s in strides_per_operand))
        (red if axis in reduced else kept).append(d)
    if not ordered:  # fastest last, so a dense block of reduced axes merges whatever its order
        red.sort(key=lambda d: -abs(d.strides[0]))
    return merge(kept), merge(red)


def plan(shape, in_strides, reduced, *, mask_strides=None, out_strides=None, ordered=False, scan=False):
    """Cached front of _plan (same arguments): a loop over one shape plans once."""
    return _plan_cached(tuple(shape), tuple(in_strides), frozenset(reduced),
                        None if mask_strides is None else tuple(mask_strides),
                        None if out_strides is None else tuple(out_strides), ordered, scan)


@lru_cache(maxsize=1024)
def _plan_cached(shape, in_strides, reduced, mask_strides, out_strides, ordered, scan):
    return _plan(shape, in_strides, reduced, mask_strides=mask_strides, out_strides=out_strides, ordered=ordered,
                 scan=scan)


def _plan(shape, in_strides, reduced, *, mask_strides=None, out_strides=None, ordered=False, scan=False):
    """The Segments of a reduction over the axes `reduced` (a set) or of a scan along the one axis in it.

    shape, in_strides, mask_strides: per axis of the input (elements; mask strides 0 where it broadcasts).
    out_strides: per axis of the input too (a reduction's reduced axes: anything, they are ignored).
    Returns None when the layout needs more than two kept or one reduced dimension (see the module doc).
    """
    ndim = len(shape)
    zeros = (0,) * ndim
    mask_strides = tuple(mask_strides) if mask_strides is not None else zeros
    out_strides = tuple(out_strides) if out_strides is not None else zeros
    if not scan:  # a reduction's output does not move along reduced axes
        out_strides = tuple(0 if i in reduced else s for i, s in enumerate(out_strides))
    if any(extent == 0 for extent in shape):
        if scan or any(extent == 0 for i, extent in enumerate(shape) if i not in reduced):
            return Segments((0, 0), (0, 0), (0, 0), (0, 0), 0, 0, 0, 0)  # no result element to write
        # every result reduces nothing (identity, initial=, mean's NaN) and no input is read: plan the kept
        # axes by the output's strides alone
        kept_only = tuple(1 if i in reduced else extent for i, extent in enumerate(shape))
        seg = _plan(kept_only, out_strides, reduced, out_strides=out_strides)
        return None if seg is None else replace(seg, reduce_count=0)
    kept, red = split_axes(shape, (tuple(in_strides), mask_strides, out_strides), reduced, ordered=ordered)
    if len(kept) > 2 or len(red) > 1:
        return None
    if len(kept) == 2 and abs(kept[0].strides[0]) < abs(kept[1].strides[0]):
        kept.reverse()  # i1 is the faster kept dimension: the column kernel's lanes run along it
    while len(kept) < 2:
        kept.insert(0, Dim(1, (0, 0, 0)))
    r = red[0] if red else Dim(1, (0, 0, 0))
    return Segments(
        count=(kept[0].extent, kept[1].extent),
        in_strides=(kept[0].strides[0], kept[1].strides[0]),
        out_strides=(kept[0].strides[2], kept[1].strides[2]),
        mask_strides=(kept[0].strides[1], kept[1].strides[1]),
        reduce_count=r.extent,
        reduce_in_stride=r.strides[0],
        reduce_out_stride=r.strides[2],
        reduce_mask_stride=r.strides[1],
    )


def gather_order(shape, strides_per_operand, reduced):
    """For a layout `plan` refused: the merged (kept, reduced) dims to copy into a C-ordered buffer of shape
    kept + reduced (reduced axes in C order, so positions still count as NumPy's argmin does)."""
    return split_axes(shape, strides_per_operand, reduced, ordered=True)
