"""The layout of a segmented scan's ranges (issue 40): whether two overlap (a ValueError: two ranges writing one
position would race), whether some positions lie in none (they get the identity first), the longest range (auto's
long ranges).  Checked before the scan runs, so it must cost little beside it.

Ranges in order that do not touch (CSR offsets, sorted ids' runs, most ragged arrays) are recognised in one pass:
under slice rules, each range starts at or after the one before it stops (``start[i + 1] >= stop[i]``, empty
ranges included) exactly when they are disjoint and sorted.  On the device that pass is one small kernel (CuPy's,
where CuPy is installed: the bounds are read in place, whatever library made them), and three numbers come to the
host (one wait).  Ranges out of order are sorted by their start in the bounds' own library
(libraries.py: ranges_layout).  A first version sorted every time: with 7.9 million ranges (lengths 1-16, 2^26
elements, H100) CuPy's sort and its elementwise passes took 3 ms beside a 0.2 ms scan.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .. import _core
from .libraries import library_of
from .operands import to_host

# out[0]: 1 where some range starts before the one before it stops (out of order, or overlapping); out[1]: the
# positions the ranges cover; out[2]: the longest range.  A warp folds its lanes', one atomic per warp.
_SOURCE = r"""
__device__ __forceinline__ long long slice_bound(long long v, long long n) {
    v = v < 0 ? v + n : v;
    return v < 0 ? 0 : v > n ? n : v;
}
extern "C" __global__ void ranges_layout(const long long *starts, const long long *stops, long long k, long long n,
                                         unsigned long long *out) {
    unsigned long long bad = 0, covered = 0, longest = 0;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < k;
         i += (long long)gridDim.x * blockDim.x) {
        const long long a = slice_bound(starts[i], n);
        long long b = slice_bound(stops[i], n);
        b = b < a ? a : b;
        covered += (unsigned long long)(b - a);
        longest = (unsigned long long)(b - a) > longest ? (unsigned long long)(b - a) : longest;
        if (i + 1 < k && slice_bound(starts[i + 1], n) < b) bad = 1;
    }
    for (int o = 16; o > 0; o >>= 1) {
        bad |= __shfl_down_sync(0xffffffffu, bad, o);
        covered += __shfl_down_sync(0xffffffffu, covered, o);
        const unsigned long long other = __shfl_down_sync(0xffffffffu, longest, o);
        longest = other > longest ? other : longest;
    }
    if (threadIdx.x % 32 == 0) {
        if (bad) atomicOr(&out[0], bad);
        atomicAdd(&out[1], covered);
        atomicMax(&out[2], longest);
    }
}
"""
_KERNEL = {}


def _in_order_host(starts, stops, n):
    """(in order, covered, longest) of host int64 bounds: the one pass, in NumPy."""
    a = np.clip(np.where(starts < 0, starts + n, starts), 0, n)
    b = np.clip(np.where(stops < 0, stops + n, stops), 0, n)
    b = np.maximum(a, b)
    return bool(np.all(a[1:] >= b[:-1])), int((b - a).sum()), int((b - a).max())


def _in_order_device(starts, stops, n):
    """(in order, covered, longest) of device bounds by the one-pass kernel, or None without CuPy.  On the call's
    stream (stream=), else CuPy's current one, after the bounds' producer (DLPack's handshake)."""
    try:
        import cupy as cp
    except ImportError:
        return None
    handle = _core.call_stream.get(None)
    # on the bounds' device (CuPy's current one may be another), on the call's stream where stream= names one
    device = int(starts.__dlpack_device__()[1]) if hasattr(starts, "__dlpack_device__") else \
        cp.asarray(starts).device.id
    with cp.cuda.Device(device), (contextlib.nullcontext() if handle is None else cp.cuda.ExternalStream(handle)):
        a, b = (cp.from_dlpack(x) if hasattr(x, "__dlpack__") else cp.asarray(x) for x in (starts, stops))
        a, b = (cp.ascontiguousarray(x.astype(cp.int64, copy=False)) for x in (a, b))  # the kernel reads x[i]
        kernel = _KERNEL.get(a.device.id)
        if kernel is None:
            kernel = _KERNEL.setdefault(a.device.id, cp.RawKernel(_SOURCE, "ranges_layout"))
        out = cp.zeros(3, dtype=cp.uint64)
        k = a.shape[0]
        kernel((max(1, min((k + 255) // 256, 1024)),), (256,), (a, b, np.int64(k), np.int64(n), out))
        bad, covered, longest = (int(v) for v in out.get())
    return not bad, covered, longest


def scan_ranges_layout(parts, host, n, fn):
    """(gaps, covered, longest) of a segmented scan's starts and stops (Operands `parts`, or `host` int64 arrays):
    whether some positions of ``0 .. n-1`` lie in no range, how many lie in one, the longest range's length;
    ValueError where two ranges overlap."""
    if host is not None:
        in_order, covered, longest = _in_order_host(host[0], host[1], n)
        if not in_order:
            overlap, covered, longest = library_of(host[0]).ranges_layout(host[0], host[1], n)
    else:
        found = _in_order_device(parts[0].obj, parts[1].obj, n)
        in_order = found is not None and found[0]
        if in_order:
            _, covered, longest = found
        else:
            overlap, covered, longest = _out_of_order_device(parts, n, fn)
    if not in_order and overlap:
        raise ValueError(f"{fn}: two of the ranges overlap (after slice rules); a segmented scan writes each range's "
                         "scan in its positions, so the ranges must be disjoint")
    return covered < n, covered, longest


def _out_of_order_device(parts, n, fn):
    """(overlap, covered, longest) of device bounds sorted in their own library (NumPy, CuPy, PyTorch, JAX), else
    brought to the host."""
    try:
        lib = library_of(parts[0].obj, fn)
        if type(library_of(parts[1].obj, fn)) is not type(lib) or getattr(lib, "name", "") == "numpy":
            raise TypeError
    except TypeError:  # bounds of another kind (a DLPack producer): their values on the host
        s, e = (np.asarray(to_host(p.obj), dtype=np.int64).reshape(-1) for p in parts)
        return library_of(s).ranges_layout(s, e, n)
    handle = _core.call_stream.get(None)  # stream=: the bounds may be written there
    with contextlib.nullcontext() if handle is None else lib.on_stream(handle):
        return lib.ranges_layout(parts[0].obj, parts[1].obj, n)
