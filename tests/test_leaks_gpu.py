"""No resource grows with use: 10^5 mixed calls leave device memory, pinned memory, the cached execution contexts,
Python objects, reference counts, traced Python memory and the process's resident memory where they were.

The calls (CALLS = 10**5 in all, WARMUP = 2000 of them first) cycle through a fixed list of specs, drawn once from a
seeded generator so every run is the same: every public function (sum, prod, min, max, mean, argmin, argmax,
cumsum, cumprod, cummax, cummin) on host NumPy inputs, CuPy inputs and gpureduce.DeviceArray inputs of 1 to 5000
elements and eight dtypes, contiguous or strided, sometimes with axis=, out=, where=, dtype= or keepdims=; and
about 5% of calls that fail (a bad axis, an unsupported dtype, min of an empty array, a wrong-shaped out=, a
__cuda_array_interface__ holding a host pointer, a 1 TiB result).  The warm-up runs every spec at least once, so
caches and the execution contexts' buffers (which only grow) reach their final size before the first
measurement; after it the same calls must change nothing:

* ``gpureduce._core.resource_stats()``: ``pool_in_use`` (bytes of the device's memory pool in use),
  ``pinned_bytes``, ``exec_device_bytes`` and ``execs`` exactly equal, after a device synchronisation with no
  result alive;
* ``sys.getrefcount`` of every reused object (inputs, out= arrays, masks, axis tuples, dtypes) unchanged;
* ``len(gc.get_objects())`` within +200, traced Python memory (tracemalloc) within 1 MiB, resident memory
  (/proc/self/statm) within 64 MiB.
"""
import gc
import os
import sys
import time
import tracemalloc
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import _cupy
from gpureduce import _core

pytestmark = pytest.mark.gpu

CALLS = 10**5
WARMUP = 2000
STATS = ("pool_in_use", "pinned_bytes", "exec_device_bytes", "execs")
GC_MARGIN = 200
TRACED_MARGIN = 1 << 20
RSS_MARGIN = 64 << 20

REDUCTIONS = ("sum", "prod", "min", "max", "mean", "argmin", "argmax")
SCANS = ("cumsum", "cumprod", "cummax", "cummin")
ORDERED = ("min", "max", "argmin", "argmax", "cummax", "cummin")  # no complex inputs for these
WITH_DTYPE = ("sum", "prod", "mean", "cumsum", "cumprod")
DTYPES = ("float32", "float64", "int32", "int64", "float16", "uint8", "bool", "complex64")
SIZES = (1, 2, 3, 17, 255, 256, 257, 1000, 1023, 4096, 5000)
SHAPES_2D = ((7, 13), (50, 100), (64, 78), (1, 5000), (5000, 1))


class CAI:
    """Exports a __cuda_array_interface__ dict and nothing else."""

    def __init__(self, description):
        self.__cuda_array_interface__ = description


def _values(rng, dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, shape).astype(dt)
    if dt.kind == "u":
        return rng.integers(0, 7, shape).astype(dt)
    if dt.kind == "i":
        return rng.integers(-3, 4, shape).astype(dt)
    if dt.kind == "c":
        return (rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)).astype(dt)
    return rng.uniform(-1, 1, shape).astype(dt)


def _result_shape(op, shape, axis, keepdims):
    if axis is None:
        if op in SCANS:
            return (int(np.prod(shape)),)
        return (1,) * len(shape) if keepdims else ()
    if op in SCANS:
        return tuple(shape)
    axes = {a % len(shape) for a in (axis if isinstance(axis, tuple) else (axis,))}
    return tuple(1 if i in axes else e for i, e in enumerate(shape)) if keepdims else \
        tuple(e for i, e in enumerate(shape) if i not in axes)


def _result_dtype(op, dtype, dt_arg):
    if dt_arg is not None:
        return np.dtype(dt_arg)
    probe = np.zeros((2,), dtype)
    if op in ("argmin", "argmax"):
        return np.dtype(np.intp)
    if op in ("cummax", "cummin"):
        return probe.dtype
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return getattr(np, op)(probe).dtype


def build_specs(cp, rng):
    """(specs, watched): specs are (description, function, args, kwargs, expected exception type or None); watched
    are (name, object) pairs whose reference counts must not change."""
    specs, watched = [], []
    keep = watched.append
    inputs = []  # (kind, dtype, host array, the input object)
    for dtype in DTYPES:
        shapes = [(n,) for n in SIZES] + list(SHAPES_2D)
        for shape in shapes:
            host = _values(rng, dtype, shape)
            views = {"contiguous": host}
            if len(shape) == 1 and shape[0] >= 3:
                views["strided"] = host[::2]
            if len(shape) == 2:
                views["transposed"] = host.T
            for layout, view in views.items():
                inputs.append(("host", dtype, layout, view))
                device = cp.asarray(host)
                device = device[::2] if layout == "strided" else device.T if layout == "transposed" else device
                inputs.append(("cupy", dtype, layout, device))
            if len(shape) == 1 and shape[0] in (1, 257, 5000):
                inputs.append(("gpureduce", dtype, "contiguous", _core.to_device(host)))
    for i, (kind, dtype, layout, x) in enumerate(inputs):
        keep((f"input {i} ({kind} {dtype} {layout} {tuple(x.shape)})", x))
    dtype_objects = {name: np.dtype(name) for name in DTYPES + ("float64", "intp")}
    for name, dt in dtype_objects.items():
        keep((f"np.dtype({name!r})", dt))
    axis_tuple = tuple([0, 1])  # built at run time: not a shared constant
    keep(("the axis tuple (0, 1)", axis_tuple))

    ops = REDUCTIONS + SCANS
    for op in ops:
        function = getattr(gpureduce, op)
        for _ in range(60):  # 60 draws per function: 660 valid specs
            kind, dtype, layout, x = inputs[rng.integers(len(inputs))]
            if op in ORDERED and dtype == "complex64":
                continue
            shape = tuple(x.shape)
            kwargs = {}
            choice = rng.integers(8)
            if len(shape) == 2 and choice in (1, 2, 3):
                axis = [0, 1, -1][choice - 1]
                if choice == 3 and op not in ("argmin", "argmax") + SCANS:
                    axis = axis_tuple
                kwargs["axis"] = axis
            if op in REDUCTIONS and rng.integers(4) == 0:
                kwargs["keepdims"] = True
            if op in WITH_DTYPE and dtype in ("float32", "int32") and rng.integers(4) == 0:
                kwargs["dtype"] = dtype_objects["float64"]
            if op in ("sum", "prod") and rng.integers(4) == 0:
                mask = rng.integers(0, 2, shape).astype(bool)
                where = mask if kind == "host" else cp.asarray(mask)
                keep((f"where= {len(watched)}", where))
                kwargs["where"] = where
            if kind != "gpureduce" and rng.integers(4) == 0:
                rshape = _result_shape(op, shape, kwargs.get("axis"), kwargs.get("keepdims", False))
                rdtype = _result_dtype(op, dtype, kwargs.get("dtype"))
                out = np.empty(rshape, rdtype) if kind == "host" else cp.empty(rshape, rdtype)
                keep((f"out= {len(watched)}", out))
                kwargs["out"] = out
            specs.append((f"{op}({kind} {dtype} {layout} {shape}, {sorted(kwargs)})", function, (x,), kwargs, None))

    # calls that fail
    host_2d = next(x for kind, dtype, layout, x in inputs if kind == "host" and x.ndim == 2)
    device_2d = next(x for kind, dtype, layout, x in inputs if kind == "cupy" and x.ndim == 2)
    strings = np.array(["a", "bc"])
    empty_host, empty_device = np.zeros(0, np.float32), cp.zeros(0, cp.float32)
    host_1k = np.arange(1000, dtype=np.float32)
    device_1k = cp.asarray(host_1k)
    wrong_host, wrong_device = np.empty(999, np.float32), cp.empty(999, cp.float32)
    lying = CAI({"shape": (1000,), "typestr": "<f4", "data": (host_1k.ctypes.data, False), "version": 3})
    huge = cp.broadcast_to(cp.ones((), dtype=cp.float32), (2**38,))  # a 1 TiB scan
    for name, obj in [("strings", strings), ("empty host", empty_host), ("empty device", empty_device),
                      ("host 1k", host_1k), ("device 1k", device_1k), ("wrong host out", wrong_host),
                      ("wrong device out", wrong_device), ("lying CAI", lying), ("huge broadcast", huge)]:
        keep((name, obj))
    failing = [
        ("sum(host 2-d, axis=5)", gpureduce.sum, (host_2d,), {"axis": 5}, ValueError),  # AxisError
        ("cumsum(cupy 2-d, axis=-3)", gpureduce.cumsum, (device_2d,), {"axis": -3}, ValueError),
        ("argmax(host 2-d, axis=(0, 1))", gpureduce.argmax, (host_2d,), {"axis": axis_tuple}, TypeError),
        ("sum(str array)", gpureduce.sum, (strings,), {}, TypeError),
        ("cumsum(str array)", gpureduce.cumsum, (strings,), {}, TypeError),
        ("min(empty host)", gpureduce.min, (empty_host,), {}, ValueError),
        ("max(empty cupy)", gpureduce.max, (empty_device,), {}, ValueError),
        ("argmin(empty cupy)", gpureduce.argmin, (empty_device,), {}, ValueError),
        ("cumsum(host, out= of the wrong shape)", gpureduce.cumsum, (host_1k,), {"out": wrong_host}, ValueError),
        ("cumsum(cupy, out= of the wrong shape)", gpureduce.cumsum, (device_1k,), {"out": wrong_device}, ValueError),
        ("sum(CAI with a host pointer)", gpureduce.sum, (lying,), {}, ValueError),
        ("cumsum(1 TiB broadcast)", gpureduce.cumsum, (huge,), {}, (gpureduce.CudaError, MemoryError)),
    ]
    # about one call in 20 fails: each failing spec repeated so that they make ~5% of the list
    repeat = max(1, round(len(specs) / 19 / len(failing)))
    specs.extend(spec for spec in failing for _ in range(repeat))
    return specs, watched


def _call(spec):
    description, function, args, kwargs, expected = spec
    try:
        result = function(*args, **kwargs)
    except Exception as e:
        if expected is not None and isinstance(e, expected):
            return
        raise AssertionError(f"{description} raised {type(e).__name__}: {e}") from e
    if expected is not None:
        raise AssertionError(f"{description} returned {type(result).__name__} instead of raising {expected}")
    del result


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _settle(cp):
    """No result alive, no work pending: collect garbage, synchronise the device."""
    gc.collect()
    gc.collect()
    cp.cuda.Device().synchronize()


def _stats(cp):
    _settle(cp)
    stats = _core.resource_stats()
    return {k: stats[k] for k in STATS}, stats


def test_resource_stats_fields():
    """resource_stats() gives the documented fields as ints; an array made and freed comes back to the pool."""
    cp = _cupy()
    before = _core.resource_stats()
    for key in ("pool_in_use", "pool_reserved", "exec_device_bytes", "pinned_bytes", "execs"):
        assert isinstance(before.get(key), int) and before[key] >= 0, f"resource_stats()[{key!r}]: {before}"
    base, _ = _stats(cp)
    a = _core.empty((1 << 20,), "float32")
    cp.cuda.Device().synchronize()
    assert _core.resource_stats()["pool_in_use"] >= base["pool_in_use"] + (4 << 20), "a 4 MiB array is not counted"
    del a
    after, _ = _stats(cp)
    assert after["pool_in_use"] == base["pool_in_use"], f"a freed DeviceArray stays in use: {base} -> {after}"


def test_failing_calls_leak_nothing():
    """1000 calls that fail after taking resources (a 1 TiB result that cannot be allocated, a host pointer
    found at run time, a wrong out=) leave the memory pool, the execution contexts and Python's objects as they
    were."""
    cp = _cupy()
    specs, watched = build_specs(cp, np.random.default_rng(1))
    failing = [s for s in specs if s[4] is not None]
    for spec in failing:  # warm-up
        _call(spec)
    refs = {name: sys.getrefcount(obj) for name, obj in watched}
    stats0, _ = _stats(cp)
    objects0 = len(gc.get_objects())
    for i in range(1000):
        _call(failing[i % len(failing)])
    stats1, _ = _stats(cp)
    objects1 = len(gc.get_objects())
    assert stats1 == stats0, f"resource_stats() changed over 1000 failing calls: {stats0} -> {stats1}"
    changed = {name: (refs[name], sys.getrefcount(obj)) for name, obj in watched
               if sys.getrefcount(obj) != refs[name]}
    assert not changed, f"reference counts changed over 1000 failing calls: {changed}"
    assert objects1 - objects0 <= GC_MARGIN, f"{objects1 - objects0} more Python objects after 1000 failing calls"


def test_no_leaks_over_1e5_mixed_calls(record_property):
    """10^5 mixed calls (module docstring): after a warm-up of 2000, the remaining 98 000 change no resource count,
    no reference count, and grow Python's objects by at most 200, traced memory by at most 1 MiB, resident memory by
    at most 64 MiB.  Takes well under 30 s on an H200 (the duration is printed)."""
    cp = _cupy()
    rng = np.random.default_rng(20240611)
    specs, watched = build_specs(cp, rng)
    order = rng.integers(len(specs), size=CALLS)
    order[: len(specs)] = np.arange(len(specs))  # the warm-up runs every spec once, then random ones
    assert len(specs) <= WARMUP, f"{len(specs)} specs: the warm-up of {WARMUP} calls must run every one"
    failing = sum(1 for i in order if specs[i][4] is not None)
    assert 0.02 * CALLS <= failing <= 0.1 * CALLS, f"{failing} failing calls of {CALLS}"
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # whatever is warned, it is warned in the warm-up first
        wrong = []
        for spec in specs:  # the first pass: every spec once, all that go wrong listed together
            try:
                _call(spec)
            except AssertionError as e:
                wrong.append(str(e))
        assert not wrong, f"{len(wrong)} of {len(specs)} calls do not do what they should:\n" + "\n".join(wrong)
        for i in order[len(specs):WARMUP]:
            _call(specs[i])
        warmed = time.perf_counter()

        stats0, full0 = _stats(cp)
        refs0 = {name: sys.getrefcount(obj) for name, obj in watched}
        objects0 = len(gc.get_objects())
        rss0 = _rss()
        tracemalloc.start()
        traced0 = tracemalloc.get_traced_memory()[0]

        for i in order[WARMUP:]:
            _call(specs[i])

        _settle(cp)
        traced1 = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        stats1, full1 = _stats(cp)
        refs1 = {name: sys.getrefcount(obj) for name, obj in watched}
        objects1 = len(gc.get_objects())
        rss1 = _rss()
    end = time.perf_counter()

    summary = (f"{CALLS} calls ({len(specs)} specs, {failing} failing) in {end - start:.1f} s (warm-up "
               f"{warmed - start:.1f} s); resource_stats {full0} -> {full1}; Python objects {objects0} -> {objects1}; "
               f"traced memory +{(traced1 - traced0) / 1024:.1f} KiB; RSS +{(rss1 - rss0) / 2**20:.1f} MiB")
    print(summary)
    record_property("leak_check", summary)
    assert stats1 == stats0, f"device resources changed: {stats0} -> {stats1}\n{summary}"
    changed = {name: (refs0[name], refs1[name]) for name in refs0 if refs0[name] != refs1[name]}
    assert not changed, f"reference counts changed (before, after): {changed}\n{summary}"
    assert objects1 - objects0 <= GC_MARGIN, f"{objects1 - objects0} more Python objects\n{summary}"
    assert traced1 - traced0 <= TRACED_MARGIN, f"traced Python memory grew by {traced1 - traced0} bytes\n{summary}"
    assert rss1 - rss0 <= RSS_MARGIN, f"resident memory grew by {(rss1 - rss0) / 2**20:.1f} MiB\n{summary}"
