"""Grouped reductions (issue 40): the reduction of the elements that share a group id, JAX's ``segment_sum`` family
and NumPy's ``bincount(ids, weights)`` / ``add.at`` forms, deterministic whatever the order of the ids.

The ids are sorted stably in the input's own library (NumPy, CuPy, PyTorch, JAX: on its current stream, in its
memory pool), the input is gathered in that order along the axis, and each group is then one range of a segmented
reduction (gpureduce/_planning/ranges.py) whose bounds are found by a binary search of the sorted ids: the elements
of a group are folded in their original order, in a fixed tree, so the bits never depend on timing.  Sorted ids
(``ids_sorted=True``) skip the sort and the gather.  Ids are checked before anything runs: integers, 1-d, one per
element along the axis, each in ``[0, num_groups)`` and ascending where ``ids_sorted=True`` says so (three small
reductions of the ids in their library, each brought to the host: a wait for device ids).
"""
from __future__ import annotations

import contextlib
import operator

import numpy as np

from .. import _core
from .numpy_rules import NoValue
from .plan import ARG_OPS
from .ranges import OPS, reduce_ranges

ACCEPTED = "a NumPy array, or a CuPy array, PyTorch tensor or JAX array on the GPU"


class _ArrayModule:
    """NumPy's, CuPy's or JAX's numpy: the few operations a grouped reduction asks of the input's library."""

    def __init__(self, xp, name):
        self.xp, self.name = xp, name

    def ids(self, ids, like):
        if self.name == "jax":
            import jax
            return jax.device_put(self.xp.asarray(ids), list(like.devices())[0])
        return self.xp.asarray(ids)

    def stable_order(self, ids):
        if self.name == "jax":
            return self.xp.argsort(ids, stable=True)
        return self.xp.argsort(ids, kind="stable")

    def take(self, a, index, axis):
        return self.xp.take(a, index, axis=axis)

    def first_at_least(self, sorted_ids, count, right):
        values = self.xp.arange(count, dtype=sorted_ids.dtype)
        return self.xp.searchsorted(sorted_ids, values, side="right" if right else "left").astype(np.int64)

    def positions(self, local, starts, order, axis, ndim):
        """Positions along the axis of the input of each group's element at `local` (-1 stays -1)."""
        shape = [1] * ndim
        shape[axis] = starts.shape[0]
        at = self.xp.clip(self.xp.reshape(starts, shape) + local, 0, None)
        if order is not None:
            at = self.xp.take(order, self.xp.clip(at, 0, order.shape[0] - 1))
        return self.xp.where(local < 0, -1, at).astype(np.int64)

    def on_stream(self, handle):
        """A context in which the library's work runs on the CUDA stream `handle` (stream= of the call)."""
        if self.name == "cupy":
            return self.xp.cuda.ExternalStream(handle)
        return contextlib.nullcontext()  # NumPy: the host; JAX: its own streams, ordered by its runtime

    def bounds(self, ids):
        """(smallest, largest, sorted?) of non-empty ids, brought to the host."""
        xp = self.xp
        ordered = bool(xp.all(ids[1:] >= ids[:-1])) if ids.shape[0] > 1 else True
        return int(xp.min(ids)), int(xp.max(ids)), ordered


class _Torch:
    """PyTorch's operations for a grouped reduction of a tensor."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch

    def ids(self, ids, like):
        return self.torch.as_tensor(ids, device=like.device)

    def stable_order(self, ids):
        return self.torch.argsort(ids, stable=True)

    def take(self, a, index, axis):
        return a.index_select(axis, index)

    def first_at_least(self, sorted_ids, count, right):
        values = self.torch.arange(count, dtype=sorted_ids.dtype, device=sorted_ids.device)
        return self.torch.searchsorted(sorted_ids.contiguous(), values, right=right).to(self.torch.int64)

    def positions(self, local, starts, order, axis, ndim):
        shape = [1] * ndim
        shape[axis] = starts.shape[0]
        at = (starts.reshape(shape) + local).clamp(min=0)
        if order is not None:
            at = order[at.clamp(max=order.shape[0] - 1)]
        return self.torch.where(local < 0, self.torch.full_like(at, -1), at).to(self.torch.int64)

    def on_stream(self, handle):
        return self.torch.cuda.stream(self.torch.cuda.ExternalStream(handle))

    def bounds(self, ids):
        ordered = bool((ids[1:] >= ids[:-1]).all()) if ids.shape[0] > 1 else True
        return int(ids.min()), int(ids.max()), ordered


def library_of(a):
    """The operations of `a`'s library, or TypeError naming what is accepted."""
    module = type(a).__module__.partition(".")[0]
    if isinstance(a, np.ndarray) and not isinstance(a, np.ma.MaskedArray):
        return _ArrayModule(np, "numpy")
    if module == "cupy":
        import cupy
        return _ArrayModule(cupy, "cupy")
    if module == "torch":
        import torch
        if a.device.type != "cuda":
            raise TypeError(f"groupby_reduce of a tensor on {a.device}: it takes {ACCEPTED}")
        return _Torch(torch)
    if module in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return _ArrayModule(jnp, "jax")
    raise TypeError(f"groupby_reduce of a {type(a).__module__}.{type(a).__name__}: it sorts the group ids in the "
                    f"input's own library, so it takes {ACCEPTED}")


def _num_groups(num_groups):
    try:
        k = operator.index(num_groups)
    except TypeError:
        raise TypeError(f"num_groups must be an int, not {type(num_groups).__name__}") from None
    if k < 0:
        raise ValueError(f"num_groups must be non-negative, got {k}")
    return k


def reduce_groups(op, a, group_ids, num_groups=None, axis=0, dtype=None, ids_sorted=False, variant="auto",
                  ddof=None):
    """``groupby_reduce``'s call: checks, the stable sort and gather in the input's library, the ranges' bounds,
    the segmented reduction, and for argmin/argmax the positions in the input.  With stream= (the call's stream),
    the library's own steps run there too."""
    if not hasattr(a, "shape") or isinstance(a, np.generic):  # a list, a NumPy scalar
        a = np.asarray(a)
    lib = library_of(a)
    handle = _core.call_stream.get(None)
    with contextlib.nullcontext() if handle is None else lib.on_stream(handle):
        return _reduce_groups(lib, op, a, group_ids, num_groups, axis, dtype, ids_sorted, variant, ddof)


def _reduce_groups(lib, op, a, group_ids, num_groups, axis, dtype, ids_sorted, variant, ddof):
    if not isinstance(op, str):
        raise TypeError(f"op must be an operator's name (a str), not {type(op).__name__}")
    if op not in OPS:
        raise ValueError(f"groupby_reduce: unknown operator {op!r}; operators are {', '.join(OPS)}")
    ndim = len(a.shape)
    if ndim == 0:
        raise TypeError("cannot groupby_reduce a 0-d array")
    if not isinstance(axis, int) or isinstance(axis, bool):
        raise TypeError(f"axis must be an int, not {type(axis).__name__}")
    if not -ndim <= axis < ndim:
        raise np.exceptions.AxisError(axis, ndim)
    axis %= ndim
    n = a.shape[axis]
    ids = lib.ids(group_ids, a)
    kind = np.dtype(str(ids.dtype).replace("torch.", "")).kind
    if kind not in "iu":
        raise TypeError(f"group_ids must be integers, not {ids.dtype}")
    if len(ids.shape) != 1 or ids.shape[0] != n:
        raise ValueError(f"group_ids must be 1-d with one id per element along axis {axis} ({n}), got shape "
                         f"{tuple(ids.shape)}")
    k = None if num_groups is None else _num_groups(num_groups)
    if n:
        low, high, ordered = lib.bounds(ids)  # waits for device ids
        if k is None:
            k = max(high + 1, 0)
        bad = low if low < 0 else high if high >= k else None
        if bad is not None:
            raise IndexError(f"group id {bad} is out of range for {k} groups (ids must lie in [0, {k}))")
        if ids_sorted and not ordered:
            raise ValueError("group_ids are not sorted (ascending): pass ids_sorted=False")
    elif k is None:
        k = 0
    order = None
    if not ids_sorted and n > 1:
        order = lib.stable_order(ids)
        a = lib.take(a, order, axis)
        ids = lib.take(ids, order, 0)
    starts = lib.first_at_least(ids, k, right=False)
    stops = lib.first_at_least(ids, k, right=True)
    result = reduce_ranges("segmented_reduce", op, a, (starts, stops), axis, dtype, None, NoValue, variant, ddof,
                           empty_gives_identity=True)
    if op in ARG_OPS:  # positions in the input along the axis, not within the group
        result = lib.positions(result, starts, order, axis, ndim)
    return result
