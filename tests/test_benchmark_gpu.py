"""A tiny benchmark end to end on the GPU: every column filled and plausible, with and without CuPy/PyTorch;
the extension's own device buffers, properties and timers that it stands on."""
import importlib.util
import sys

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce.benchmark import benchmark, device_info

bench = importlib.import_module("gpureduce.benchmark")  # the module: gpureduce.benchmark is the function

pytestmark = pytest.mark.gpu


def _usable(peer):
    """Whether a peer library can run here (torch needs its CUDA build)."""
    if importlib.util.find_spec(peer) is None:
        return False
    if peer == "torch":
        import torch

        return torch.cuda.is_available()
    return True


def test_device_info_is_measured_once():
    info = device_info()
    assert isinstance(info["name"], str) and info["name"]
    assert info["sm_count"] > 0 and info["l2_bytes"] > 0 and info["memory_bytes"] > 2**30
    major, minor = info["compute_capability"]
    assert major >= 7 and minor >= 0
    assert 100 < info["read_gbps"] < 20000 and 100 < info["copy_gbps"] < 20000
    for way in ("h2d_gbps", "d2h_gbps"):  # pinned host <-> device: the ceiling of host-array calls
        assert isinstance(info[way], float) and 0 < info[way] < 20000, way
    assert device_info() == info


def test_memory_info():
    free, total = _core.memory_info()
    assert 0 < free <= total and total > 2**30


@pytest.mark.parametrize("op", ["sum", "max", "cumsum", "cummax"])
def test_tiny_benchmark(op):
    kind, gr_op = bench.OPERATORS[op]
    registered = gpureduce.variants(kind=kind, op=gr_op)
    if not registered:
        pytest.skip(f"no {kind} variants of {gr_op} in this build")
    result = benchmark(op, "all", sizes=[2**12, 2**20 + 3], dtype="float32", repeat=3, warmup=1, progress=False)
    ceiling = device_info()["read_gbps" if kind == "reduce" else "copy_gbps"]
    ours = [r for r in result if not r.peer]
    assert {r.variant for r in ours} == {v.name for v in registered}
    measured = {r.variant for r in result if r.peer}
    assert "numpy" in measured
    for peer in ("cupy", "torch"):  # measured where it can run this op, else the table says why not
        assert (peer in measured) != (peer in result.missing_peers), peer
        if not _usable(peer):
            assert peer in result.missing_peers and peer in result.note()
    for r in result:
        assert r.min_us <= r.median_us <= r.max_us and r.median_us > 0
        assert 0 < r.gbps < 1.2 * ceiling, f"{r.variant}: {r.gbps} GB/s is above the ceiling {ceiling}"
    for r in ours:
        assert r.correct, f"{r.variant} n={r.n}: error {r.rel_error}"
        assert r.pct_ceiling is not None and r.speedup_total is not None and r.deterministic is not None
        v = next(v for v in gpureduce.variants(kind=kind) if v.name == r.variant)
        if v.deterministic:
            assert r.deterministic, f"{r.variant} is registered deterministic but was not"
    assert "GB/s" in str(result) and "<table>" in result._repr_html_()


@pytest.mark.parametrize("op", ["sum", "cumsum"])
def test_benchmark_without_cupy_or_torch(monkeypatch, op):
    """No hidden dependency: with only NumPy importable the run completes, checks every variant, and says
    which peers were not installed."""
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "torch", None)
    kind = "scan" if op.startswith("cum") else "reduce"
    if not gpureduce.variants(kind=kind):
        pytest.skip(f"no {kind} variants in this build")
    result = benchmark(op, "all", sizes=[2**16], repeat=2, warmup=0, progress=False)
    assert {r.variant for r in result if r.peer} == {"numpy"}
    assert result.missing_peers == {"cupy": "not installed", "torch": "not installed"}
    assert str(result).splitlines()[-1] == "peers not measured: cupy (not installed), torch (not installed)"
    assert all(r.correct for r in result if not r.peer)


def test_a_wrong_result_is_not_correct(monkeypatch):
    """The correct column catches a wrong scan element and a wrong length, as it did with CuPy."""
    real = bench._run_once

    def off_by_one(*args):
        got = real(*args).copy()
        got[len(got) // 2] += 1
        return got

    for fake in (off_by_one, lambda *args: real(*args)[:-1]):
        monkeypatch.setattr(bench, "_run_once", fake)
        result = benchmark("cumsum", "cub", sizes=[4096], repeat=1, warmup=0, peers=False, progress=False)
        assert [r.correct for r in result] == [False]


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_a_scan_that_writes_nothing_is_not_correct(monkeypatch, dtype):
    """A scan that leaves its out= alone returns the poison the benchmark filled it with (NaN, or a sentinel
    for integers), not what the memory pool last held (the previous variant's right answer)."""
    names = [v.name for v in gpureduce.variants(kind="scan", op="sum")]
    lazy = next(name for name in names if name not in ("cub", "auto"))
    real = bench.scans.scan

    def scan(op, a, axis=None, result_dtype=None, out=None, **kwargs):
        if kwargs.get("variant") == lazy and out is not None:
            return out  # as the benchmark made it
        return real(op, a, axis, result_dtype, out, **kwargs)

    monkeypatch.setattr(bench.scans, "scan", scan)
    result = benchmark("cumsum", ["cub", lazy], sizes=[4096, 2**20 + 3], dtype=dtype, repeat=1, warmup=0,
                       peers=False, progress=False)
    for r in result:
        assert r.correct == (r.variant == "cub"), (r.variant, r.n, r.rel_error)


def test_a_reduction_that_writes_nothing_is_not_correct(monkeypatch):
    """A reduction whose result is stale (the previous variant's right answer on the same data) fails the
    check on the exact-valued data in between."""
    names = [v.name for v in gpureduce.variants(kind="reduce", op="sum")]
    lazy = next(name for name in names if name not in ("cub", "auto"))
    real = bench.reductions.reduce
    last = []

    def reduce(op, a, *args, **kwargs):
        if kwargs.get("variant") == lazy:
            return last[-1]
        last.append(real(op, a, *args, **kwargs))
        return last[-1]

    monkeypatch.setattr(bench.reductions, "reduce", reduce)
    for op in ("sum", "max"):
        result = benchmark(op, ["cub", lazy], sizes=[4096], repeat=1, warmup=0, peers=False, progress=False)
        assert [(r.variant, r.correct) for r in result] == [("cub", True), (lazy, False)]


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max", "cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_every_variant_is_correct_on_the_checks(op, dtype):
    """The checks themselves (exact-valued data, poisoned out=, per-element bounds) pass every registered
    variant, at a size of several blocks and an odd one."""
    result = benchmark(op, "all", sizes=[2**16 + 7], dtype=dtype, repeat=1, warmup=0, peers=False, progress=False)
    assert result.rows and all(r.correct for r in result), [(r.variant, r.rel_error) for r in result if not r.correct]


@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "int32", "float16", "float32", "float64", "complex128"])
@pytest.mark.parametrize("shape", [(), (0,), (5,), (3, 4), (2**21 + 5,)])  # the last one: above the pinned path
def test_to_device_round_trip(dtype, shape, rng):
    host = (rng.uniform(0, 100, shape) if shape else np.float64(rng.uniform())).astype(dtype)
    dev = _core.to_device(host)
    assert isinstance(dev, gpureduce.DeviceArray) and dev.shape == host.shape and dev.dtype == host.dtype
    back = dev.get()
    np.testing.assert_array_equal(back, host)
    assert back.tobytes() == np.ascontiguousarray(host).tobytes()


def test_to_device_of_a_strided_view():
    host = np.arange(24, dtype=np.int64).reshape(4, 6)[:, ::2].T
    np.testing.assert_array_equal(_core.to_device(host).get(), host)


def test_empty_and_filled():
    assert np.isnan(_core.empty((3, 4), np.float32, 0xFF).get()).all()
    assert np.isnan(_core.empty(5, "float16", 0xFF).get()).all()
    assert (_core.empty((7,), np.int32, 0xFF).get() == -1).all()
    assert (_core.empty((2, 2), np.complex64, 0).get() == 0).all()
    empty = _core.empty((0, 3), np.float64)
    assert empty.shape == (0, 3) and empty.get().shape == (0, 3)
    # an uninitialised array is a real one: gpureduce reads it, CuPy/PyTorch can view it
    big = _core.empty((1000,), np.float32, 0)
    assert gpureduce.sum(big) == 0.0


def test_time_calls_times_a_python_callable():
    dev = _core.to_device(np.ones(2**20, np.float32))
    times = _core.time_calls(lambda: gpureduce.cumsum(dev), 5, 1)
    assert len(times) == 5 and all(0 < t < 1e6 for t in times)
    with pytest.raises(ZeroDivisionError):
        _core.time_calls(lambda: 1 / 0, 1)
    assert _core.time_calls(lambda: None, 1, 0, False)[0] >= 0  # the module is still usable after the error


@pytest.mark.parametrize("kind, op, shape, axis", [
    ("reduce", "sum", (2**20,), None),   # the flat kernel
    ("reduce", "max", (64, 1000), 0),    # the axis kernels
    ("scan", "sum", (2**16,), None),
    ("scan", "prod", (30, 20), 1),
])
def test_time_device_times_a_plan_and_gives_its_result(kind, op, shape, axis, rng):
    """_core.time_device(plan): the plan run by the one runner, its kernels launched again for each timed call;
    the result is the plan's (the kernels rewrite the same values); a host plan is refused."""
    from gpureduce._planning.plan import reduce_plan, scan_plan

    host = rng.uniform(0.5, 1.5, shape).astype(np.float32)
    dev = _core.to_device(host)
    plan = (reduce_plan if kind == "reduce" else scan_plan)(op, dev, axis)
    times, result = _core.time_device(plan, 4, 1)
    assert len(times) == 4 and all(0 < t < 1e6 for t in times)
    want = getattr(np, op if kind == "reduce" else f"cum{op}")(host.astype(np.float64), axis=axis)
    np.testing.assert_allclose(np.asarray(result.get()).astype(np.float64), want, rtol=1e-3)
    with pytest.raises(TypeError, match="device arrays"):
        _core.time_device(reduce_plan("sum", host), 1)
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        _core.time_device(plan, 0)


@pytest.mark.parametrize("what", ["read", "copy", "h2d", "d2h"])
def test_time_ceiling(what):
    host = np.arange(2**20, dtype=np.float32)
    dev = _core.to_device(host)
    times = _core.time_ceiling(what, dev, 3, 1)
    assert len(times) == 3 and all(0 < t < 1e6 for t in times)
    np.testing.assert_array_equal(dev.get(), host)  # h2d writes the array's own bytes back
    with pytest.raises(TypeError, match="device arrays"):
        _core.time_ceiling(what, host, 1)
