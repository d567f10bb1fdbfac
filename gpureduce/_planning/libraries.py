"""The few array operations the grouped reductions and scans, the segmented scans' checks and the exact sums of
complex arrays and dot products ask of the input's own library (NumPy, CuPy, PyTorch, JAX): sorts, gathers,
scatters, binary searches, small checks, a complex array's parts, products in float64, run there (on its current
stream, in its memory pool) rather than by gpureduce, which has no sort.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .operands import COMPLEX_PART, to_host

ACCEPTED = "a NumPy array, or a CuPy array, PyTorch tensor or JAX array on the GPU"


class _ArrayModule:
    """NumPy's, CuPy's or JAX's numpy: the few operations gpureduce asks of the input's library."""

    def __init__(self, xp, name):
        self.xp, self.name = xp, name

    def ids(self, ids, like):
        if self.name == "jax":
            import jax
            return jax.device_put(self.xp.asarray(ids), list(like.devices())[0])
        return self.xp.asarray(ids)

    def astype(self, x, dtype):
        return x.astype(dtype)

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
        """(smallest, largest, sorted?) of non-empty ids, brought to the host in one wait (in the ids' dtype: any
        uint64 id)."""
        xp = self.xp
        parts = [xp.min(ids), xp.max(ids)]
        if ids.shape[0] > 1:
            parts.append(xp.all(ids[1:] >= ids[:-1]).astype(ids.dtype))
        host = to_host(xp.stack(parts))
        return int(host[0]), int(host[1]), ids.shape[0] <= 1 or bool(host[2])

    def id_notes(self, ids):
        """Two zero int64 on the ids' device where the grouped sums' scatter notes the ids out of range (it reads
        the ids anyway: no pass of their own), or None where the library's arrays are not written in place (NumPy
        ids go to the device for the call; JAX's arrays are immutable)."""
        if self.name != "cupy":
            return None
        with self.xp.cuda.Device(ids.device.id):
            return self.xp.zeros(2, dtype=np.int64)

    def id_range(self, ids):
        """(smallest, largest) of non-empty ids, brought to the host in one wait: bounds without the order."""
        xp = self.xp
        host = to_host(xp.stack([xp.min(ids), xp.max(ids)]))
        return int(host[0]), int(host[1])

    def parts(self, a):
        """The real and imaginary parts of complex `a`: views of its memory (NumPy, CuPy), or copies (JAX)."""
        return self.xp.real(a), self.xp.imag(a)

    def complex_of(self, real, imag):
        """The complex array whose parts are `real` and `imag` (float32 or float64, one shape), set as they are:
        no arithmetic, so an infinite part leaves the other alone."""
        dtype = next(c for c, part in COMPLEX_PART.items() if part == real.dtype)
        if self.name == "jax":
            import jax
            return jax.lax.complex(real, imag)
        result = self.xp.empty(real.shape, dtype=dtype)
        result.real, result.imag = real, imag
        return result

    def is_nan(self, a):
        """Where `a` is NaN (a complex element: where either part is)."""
        return self.xp.isnan(a)

    def zero_where(self, mask, a):
        """A copy of `a` with 0 where `mask` is True."""
        return self.xp.where(mask, self.xp.zeros((), a.dtype), a)

    def float64_vector(self, a):
        """`a`'s elements in C order as a new 1-d float64 array (a real `a`: every float16, bfloat16 and float32
        value is a float64 one exactly)."""
        return self.xp.reshape(self.xp.asarray(a), (-1,)).astype(np.float64)

    def concatenate(self, arrays, axis=0):
        return self.xp.concatenate(arrays, axis=axis)

    def is_finite(self, a):
        return self.xp.isfinite(a)

    def any_true(self, mask):
        """Whether some element of `mask` is True, on the host (a device mask: one wait)."""
        return bool(self.xp.any(mask))

    def both(self, mask, where):
        """mask & where, `where` (where= of a call: True, or an array broadcast with the input) in the library."""
        return mask if where is True else self.xp.logical_and(mask, self.xp.asarray(where))

    def scatter(self, values, index, axis):
        """The array r with ``r[..., index[i], ...] = values[..., i, ...]`` along `axis` (`index` a permutation)."""
        at = (slice(None),) * axis + (index,)
        if self.name == "jax":
            return self.xp.zeros_like(values).at[at].set(values)
        result = self.xp.empty_like(values)
        result[at] = values
        return result

    def runs(self, sorted_ids):
        """(starts, stops) of the runs of equal ids of a non-empty sorted list, int64: their count is the data's,
        so this waits for device ids."""
        xp = self.xp
        heads = xp.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1
        starts = xp.concatenate([xp.zeros(1, dtype=heads.dtype), heads]).astype(np.int64)
        stops = xp.concatenate([heads, xp.full(1, sorted_ids.shape[0], dtype=heads.dtype)]).astype(np.int64)
        return starts, stops

    def ranges_layout(self, starts, stops, n):
        """(overlap, covered, longest) of ranges ``[starts[i], stops[i])`` of positions ``0 .. n-1`` under NumPy's
        slice rules: whether two non-empty ones share a position, how many positions they hold in all and the
        longest one's length, brought to the host (one wait).  Sorted by their start (empty ones last), two overlap where one starts before the one
        before it stops."""
        xp = self.xp
        a, b = xp.asarray(starts).astype(np.int64), xp.asarray(stops).astype(np.int64)  # room for + n
        a = xp.clip(xp.where(a < 0, a + n, a), 0, n)
        b = xp.clip(xp.where(b < 0, b + n, b), 0, n)
        empty = b <= a
        a, b = xp.where(empty, n, a), xp.where(empty, n, b)
        order = self.stable_order(a)
        a, b = xp.take(a, order), xp.take(b, order)
        overlap = xp.any(b[:-1] > a[1:]).astype(a.dtype)
        host = to_host(xp.stack([overlap, xp.sum(b - a), xp.max(b - a)]))
        return bool(host[0]), int(host[1]), int(host[2])


class _Torch:
    """PyTorch's operations, as _ArrayModule's."""

    name = "torch"

    def __init__(self, torch):
        self.torch = torch

    def ids(self, ids, like):
        return self.torch.as_tensor(ids, device=like.device)

    def astype(self, x, dtype):
        return x.to(getattr(self.torch, np.dtype(dtype).name))

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
        parts = [ids.min(), ids.max()]
        if ids.shape[0] > 1:
            parts.append((ids[1:] >= ids[:-1]).all().to(ids.dtype))
        host = self.torch.stack(parts).cpu()
        return int(host[0]), int(host[1]), ids.shape[0] <= 1 or bool(host[2])

    def id_notes(self, ids):
        return self.torch.zeros(2, dtype=self.torch.int64, device=ids.device)

    def id_range(self, ids):
        host = self.torch.stack(self.torch.aminmax(ids)).cpu()  # one pass over the ids
        return int(host[0]), int(host[1])

    def parts(self, a):
        return a.real, a.imag

    def complex_of(self, real, imag):
        return self.torch.complex(real, imag)

    def is_nan(self, a):
        return self.torch.isnan(a)

    def zero_where(self, mask, a):
        return self.torch.where(mask, self.torch.zeros((), dtype=a.dtype, device=a.device), a)

    def float64_vector(self, a):
        return a.reshape(-1).to(self.torch.float64)

    def concatenate(self, arrays, axis=0):
        return self.torch.cat(arrays, dim=axis)

    def is_finite(self, a):
        return self.torch.isfinite(a)

    def any_true(self, mask):
        return bool(mask.any())

    def both(self, mask, where):
        return mask if where is True else mask & self.torch.as_tensor(where, device=mask.device)

    def scatter(self, values, index, axis):
        return self.torch.empty_like(values).index_copy_(axis, index, values)

    def runs(self, sorted_ids):
        torch = self.torch
        heads = torch.nonzero(sorted_ids[1:] != sorted_ids[:-1]).flatten() + 1
        zero = torch.zeros(1, dtype=heads.dtype, device=heads.device)
        end = torch.full((1,), sorted_ids.shape[0], dtype=heads.dtype, device=heads.device)
        return torch.cat([zero, heads]).to(torch.int64), torch.cat([heads, end]).to(torch.int64)

    def ranges_layout(self, starts, stops, n):
        torch = self.torch
        a, b = starts.to(torch.int64), stops.to(torch.int64)
        a = torch.where(a < 0, a + n, a).clamp(0, n)
        b = torch.where(b < 0, b + n, b).clamp(0, n)
        empty = b <= a
        a, b = torch.where(empty, n, a), torch.where(empty, n, b)
        order = torch.argsort(a, stable=True)
        a, b = a[order], b[order]
        overlap = (b[:-1] > a[1:]).any().to(torch.int64)
        host = torch.stack([overlap, (b - a).sum(), (b - a).max()]).cpu()
        return bool(host[0]), int(host[1]), int(host[2])


def library_of(a, fn="groupby_reduce", needs="it sorts in the input's own library"):
    """The operations of `a`'s library, or TypeError naming what is accepted (`fn`: the public function, `needs`:
    why it takes those alone)."""
    module = type(a).__module__.partition(".")[0]
    if isinstance(a, np.ndarray) and not isinstance(a, np.ma.MaskedArray):
        return _ArrayModule(np, "numpy")
    if module == "cupy":
        import cupy
        return _ArrayModule(cupy, "cupy")
    if module == "torch":
        import torch
        if a.device.type != "cuda":
            raise TypeError(f"{fn} of a tensor on {a.device}: it takes {ACCEPTED}")
        return _Torch(torch)
    if module in ("jax", "jaxlib"):
        import jax.numpy as jnp
        return _ArrayModule(jnp, "jax")
    raise TypeError(f"{fn} of a {type(a).__module__}.{type(a).__name__}: {needs}, so it takes {ACCEPTED}")
