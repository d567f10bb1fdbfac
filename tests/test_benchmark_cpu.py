"""The benchmark helper's result object, argument checks, peers and correctness arithmetic, on synthetic rows:
no GPU needed."""
import csv
import importlib
import io
import json
import math
import sys
import types

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce.benchmark import PEERS, BenchmarkResult, BenchmarkRow, benchmark, parse_sizes

bench = importlib.import_module("gpureduce.benchmark")  # the module: gpureduce.benchmark is the function

DEVICE = dict(device=0, name="Synthetic GPU", sm_count=132, l2_bytes=60 << 20, memory_bytes=141 << 30,
              read_gbps=4300.0, copy_gbps=4250.0)


def synthetic(names=("interleaved_divergent", "shuffle", "cub"), peers=("cupy",), op="sum", missing=None):
    rows = []
    for n in (2**10, 2**20):
        for i, name in enumerate(names):
            us = 90.0 / (1 + i)
            rows.append(BenchmarkRow(name, op, n, "float32", us * n / 2**20, us * n / 2**20 * 0.9,
                                     us * n / 2**20 * 1.1, 4 * n / (us * n / 2**20) / 1e3, 50.0 + i,
                                     speedup_step=None if i == 0 else 3.0, speedup_total=1.0 + i,
                                     rel_error=1e-7, correct=True, deterministic=True, repeats=30))
        for name in peers:
            rows.append(BenchmarkRow(name, op, n, "float32", 25.0, 24.0, 26.0, 100.0, 40.0, repeats=30, peer=True))
    return BenchmarkResult(rows, DEVICE, missing)


def test_str_is_an_aligned_table():
    text = str(synthetic())
    lines = text.splitlines()
    assert "Synthetic GPU" in lines[0] and "sum float32" in lines[0]
    header, rule = lines[1], lines[2]
    assert header.split()[:3] == ["variant", "n", "median"]
    assert set(rule.replace(" ", "")) == {"-"}
    body = [l for l in lines[3:] if l.strip()]
    assert len(body) == 8
    assert len({len(l) for l in body}) == 1, "rows are not aligned"
    assert "" in lines[3:], "sizes are not separated"


def test_html_has_one_row_per_result():
    html = synthetic()._repr_html_()
    assert html.count("<tr") == 1 + 8 and "<th>GB/s</th>" in html and "Synthetic GPU" in html


def test_csv_and_json_round_trip(tmp_path):
    result = synthetic()
    text = result.to_csv(tmp_path / "r.csv")
    rows = list(csv.DictReader(io.StringIO(text)))
    assert len(rows) == 8 and rows[0]["variant"] == "interleaved_divergent" and float(rows[0]["gbps"]) > 0
    assert (tmp_path / "r.csv").read_text() == text
    data = json.loads(result.to_json(tmp_path / "r.json"))
    assert data["device"]["name"] == "Synthetic GPU" and len(data["rows"]) == 8


def test_dataframe():
    pd = pytest.importorskip("pandas")
    df = synthetic().to_dataframe()
    assert isinstance(df, pd.DataFrame) and list(df["variant"])[:3] == ["interleaved_divergent", "shuffle", "cub"]


def test_plot_returns_a_figure_without_showing(tmp_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    fig = synthetic().plot(tmp_path / "p.png")
    assert len(fig.axes) == 2
    assert (tmp_path / "p.png").stat().st_size > 1000


def _series_looks(fig, names):
    """{name: (colour, marker)} of the lines of each axis that draw a series (not the ceiling or the 1x line)."""
    from matplotlib.colors import to_hex

    looks = []
    for ax in fig.axes:
        lines = [line for line in ax.get_lines() if line.get_label() in names]
        looks.append({line.get_label(): (to_hex(line.get_color()), line.get_marker()) for line in lines})
    return looks


@pytest.mark.parametrize("kind, op", [("reduce", "sum"), ("scan", "cumsum")])
def test_every_series_has_its_own_colour_and_marker(kind, op):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    names = [v.name for v in gpureduce.variants(kind=kind)] + ["from_another_build"]
    peers = list(PEERS) + ["jax"]  # a peer this version does not know still gets a look of its own
    for looks in _series_looks(synthetic(names, peers, op).plot(), names + peers):
        assert set(looks) == set(names + peers)
        assert len(set(looks.values())) == len(looks), f"two series look the same: {looks}"


def test_a_series_looks_the_same_in_every_plot():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    everything = list(dict.fromkeys(v.name for v in gpureduce.variants())) + list(PEERS)
    assert len(set(bench.series_styles(everything).values())) == len(everything)
    a = _series_looks(synthetic(("shuffle", "cub", "auto"), ("torch", "numpy")).plot(), everything)[0]
    b = _series_looks(synthetic(("auto", "cub"), ("numpy",), op="cumsum").plot(), everything)[0]
    c = _series_looks(synthetic(("cub", "two_pass")).plot(), everything)[0]
    for name in ("cub", "auto", "numpy"):
        assert a[name] == b.get(name, a[name]) == c.get(name, a[name]), name


def test_missing_peers_are_reported():
    result = synthetic(peers=("numpy",), missing={"cupy": "not installed", "torch": "installed without CUDA"})
    note = "peers not measured: cupy (not installed), torch (installed without CUDA)"
    assert result.note() == note and str(result).splitlines()[-1] == note
    assert note in result._repr_html_()
    assert json.loads(result.to_json())["missing_peers"] == {"cupy": "not installed", "torch": "installed without CUDA"}
    assert synthetic().note() == "" and "peers not measured" not in str(synthetic())


# ---------------------------------------------------------------- peers, without CuPy or PyTorch

def test_peers_that_are_not_installed_are_left_out(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "torch", None)
    calls, missing = bench._peer_calls("sum")
    assert list(calls) == ["numpy"]
    assert missing == {"cupy": "not installed", "torch": "not installed"}
    host = np.arange(10.0)
    assert calls["numpy"](None, host)() == 45.0


def test_peers_that_cannot_run_the_op_say_why(monkeypatch):
    fake_cupy = types.ModuleType("cupy")
    fake_cupy.sum = fake_cupy.prod = fake_cupy.min = fake_cupy.max = fake_cupy.cumsum = fake_cupy.cumprod = None
    fake_torch = types.ModuleType("torch")
    fake_torch.cuda = types.SimpleNamespace(is_available=lambda: False)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    calls, missing = bench._peer_calls("cummax")
    assert list(calls) == ["numpy"]
    assert missing == {"cupy": "has no cummax", "torch": "installed without CUDA"}


def test_benchmark_needs_no_cupy(monkeypatch):
    """Nothing before the device work imports CuPy: without it (and without a GPU) the call gets as far as
    the device and says why there is none."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    if gpureduce.device_count():
        pytest.skip("a GPU is here: test_benchmark_gpu.py runs the benchmark without CuPy")
    with pytest.raises(gpureduce.CudaError, match="no CUDA device is available"):
        benchmark("sum", sizes=[1024], progress=False)
    with pytest.raises(gpureduce.CudaError, match="no CUDA device is available"):
        gpureduce.device_info()


# ---------------------------------------------------------------- the correctness check

EPS32 = float(np.finfo(np.float32).eps)
SCAN_NAMES = ("cub", "sequential")  # registered scan variants: error_bound checks the name


def _numpy(op, x):
    return np.asarray(bench._NUMPY_OPS[op](x))


@pytest.mark.parametrize("op", list(bench.OPERATORS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_judge_accepts_numpy_results(op, dtype, rng):
    """NumPy's own answer (a serial chain for the float scans) passes, on timing data and on exact data."""
    gr_op = bench.OPERATORS[op][1]
    x = bench._random(5000, dtype, gr_op, rng)
    err, ok = bench._judge(op, x, _numpy(op, x), "cub")
    assert ok and 0.0 <= err <= 1.0
    e = bench._exact_data(5000, dtype, gr_op, rng)
    assert bench._judge(op, e, _numpy(op, e), "cub", exact=True) == (0.0, True)


def test_exact_variant_is_judged_by_the_correctly_rounded_bits():
    """The variant "exact" promises the exact sum rounded once: judged by those bits, not against the float64
    reference with its zero bound (0/0 when equal to it, x/0 otherwise: every "exact" row read as incorrect)."""
    x = np.array([1e16, 1.0, -1e16], np.float64)  # NumPy's float64 sum: 0.0; the exact sum: 1.0
    case = bench._case("sum", x, None, ["exact", "cub"])
    assert bench._judge_case("sum", case, np.float64(1.0), "exact") == (0.0, True)
    assert bench._judge_case("sum", case, np.float64(0.0), "exact") == (math.inf, False)
    err, ok = bench._judge_case("sum", case, np.float64(np.nan), "exact")
    assert math.isnan(err) and not ok
    assert bench._judge_case("sum", case, np.float32(1.0), "exact") == (math.inf, False)  # NumPy's dtype only
    zeros = bench._case("sum", np.array([-0.0, -0.0], np.float32), None, ["exact"])
    assert bench._judge_case("sum", zeros, np.float32(0.0), "exact") == (0.0, True)  # +0.0, as NumPy's sums
    assert bench._judge_case("sum", zeros, np.float32(-0.0), "exact") == (math.inf, False)
    assert bench._judge_case("sum", case, np.float64(0.0), "cub")[1]  # the others: still their bound


def test_judge_scan_with_a_nan_left_is_incorrect(rng):
    x = rng.uniform(-1, 1, 4096).astype(np.float32)
    for i in (0, 1000, 4095):
        got = np.cumsum(x)
        got[i] = np.nan  # an element the scan never wrote: the poison of its out=
        err, ok = bench._judge("cumsum", x, got, "cub")
        assert math.isnan(err) and not ok
        assert not bench._judge("cumsum", x, got, "cub", exact=True)[1]
    assert not bench._judge("cumsum", x, np.full(4096, np.nan, np.float32), "cub")[1]  # wrote nothing


def test_judge_scan_with_the_last_element_missing_is_incorrect(rng):
    x = rng.uniform(-1, 1, 4096).astype(np.float32)
    assert bench._judge("cumsum", x, np.cumsum(x)[:-1], "cub") == (math.inf, False)
    assert bench._judge("cummax", x, np.maximum.accumulate(x)[:-1], "cub") == (math.inf, False)
    assert bench._judge("cumsum", x, np.cumsum(x, dtype=np.float64), "cub") == (math.inf, False)  # wrong dtype
    i = np.arange(10, dtype=np.int32)
    assert bench._judge("cumsum", i, np.cumsum(i).astype(np.int32), "cub") == (math.inf, False)  # NumPy: int64
    assert bench._judge("sum", x, np.cumsum(x), "cub") == (math.inf, False)  # an array for a scalar


def test_judge_holds_each_scan_element_to_its_own_bound(rng):
    """An early element off by 10 times its own bound is wrong, though it lies far within the old rule's
    whole-array bound (8 eps log2(n) sum|x|)."""
    n = 2**14
    x = rng.uniform(-1, 1, n).astype(np.float32)
    got = np.cumsum(x)
    assert bench._judge("cumsum", x, got, "cub")[1]
    from gpureduce.testing import error_bound

    bound = error_bound("cumsum", x, np.float32, variant="cub")
    i = 3
    delta = 10 * bound[i]
    old_bound = 8 * EPS32 * math.log2(n) * float(np.sum(np.abs(x), dtype=np.float64))
    assert delta < old_bound / 100
    got[i] = np.float32(got[i] + delta)
    err, ok = bench._judge("cumsum", x, got, "cub")
    assert not ok and err > 5
    assert abs(float(got[i]) - float(np.cumsum(x.astype(np.float64))[i])) < old_bound  # the old rule: "correct"
    # the error is the worst element's |error| / its bound
    ref = np.cumsum(x.astype(np.float64))
    assert err == pytest.approx(float(np.max(np.abs(got - ref) / bound)), rel=1e-12)


def test_judge_exact_data_off_by_one_ulp_is_incorrect(rng):
    for op in ("cumsum", "cumprod", "cummax", "sum", "prod", "min"):
        gr_op = bench.OPERATORS[op][1]
        e = bench._exact_data(3000, np.float32, gr_op, rng)
        got = _numpy(op, e).copy()
        assert bench._judge(op, e, got, "cub", exact=True) == (0.0, True)
        flat = got.reshape(-1)
        flat[-1] = np.nextafter(flat[-1], np.float32(np.inf))
        assert bench._judge(op, e, got, "cub", exact=True) == (math.inf, False), op
        if op in ("cumsum", "sum"):  # within the rounding bound, so only == catches it
            assert bench._judge(op, e, got, "cub")[1]


@pytest.mark.parametrize("gr_op", ["sum", "prod", "min", "max"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int8", "int32", "int64", "uint16", "uint64"])
@pytest.mark.parametrize("n", [1, 5, 1000, 3 * 2**12 + 1])
def test_exact_data_is_exact_in_any_order(gr_op, dtype, n, rng):
    """Every association gives the same, exact answer: NumPy's pairwise and serial orders, a strided tree and
    the wide reference all agree; no NaN, no infinity; sums stay where every integer is exact."""
    x = bench._exact_data(n, dtype, gr_op, rng)
    assert x.dtype == np.dtype(dtype) and x.shape == (n,)
    dt = np.dtype(dtype)
    scan, reduce = f"cum{gr_op}", gr_op
    whole = _numpy(reduce, x)
    running = _numpy(scan, x)
    assert running[-1] == whole
    if dt.kind == "f":
        assert np.isfinite(running).all()
        wide = _numpy(scan, x.astype(np.float64))
        assert np.array_equal(running, wide)  # NumPy's own serial scan in the dtype rounds nothing
        pad = np.concatenate([x, np.full(-n % 8, {"sum": 0, "prod": 1}.get(gr_op, x[0]), dt)])
        fn = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max}[gr_op]
        assert fn(fn(pad.reshape(-1, 8), axis=0)) == whole  # a strided order, as the atomic variants take
        if gr_op == "sum":
            assert np.abs(x.astype(np.float64)).sum() <= 2 ** (np.finfo(dt).nmant + 1)
    if gr_op == "prod" and dt.kind in "iu":
        assert np.all(running % 2 == 1)  # odd: a wrapped product never reaches 0
    if gr_op in ("min", "max") and n > 100:
        assert len(np.unique(x)) > 3 and np.all(np.abs(np.diff(x.astype(np.float64))) <= 1)  # a walk


def test_exact_data_of_float16_sums_is_sparse_where_it_must():
    x = bench._exact_data(2**16, np.float16, "sum", np.random.default_rng(5))
    assert 0 < np.abs(x.astype(np.float64)).sum() <= 2048
    assert np.array_equal(np.cumsum(x), np.cumsum(x.astype(np.float64)))


def test_poison_byte():
    f = np.cumsum(np.linspace(-1, 1, 100))
    assert bench._poison_byte(f, np.float32) == 0xFF
    assert np.isnan(np.frombuffer(b"\xff" * 2, np.float16)[0])
    ints = np.arange(-5, 5, dtype=np.int64)
    assert bench._poison_byte(ints, np.int64) == 0xA5
    taken = np.array([0, int(np.frombuffer(b"\xa5" * 8, np.int64)[0])], np.int64)  # the first sentinel is an answer
    byte = bench._poison_byte(taken, np.int64)
    assert byte not in (None, 0xA5) and np.frombuffer(bytes([byte]) * 8, np.int64)[0] not in taken
    assert bench._poison_byte(np.array([np.nan, 1.0]), np.float64) == 0xA5  # NaN is an answer: not NaN then


def test_bounds_are_error_bound_per_element_shared_by_the_variants(rng):
    from gpureduce.testing import error_bound

    x = rng.uniform(-1, 1, 3000).astype(np.float32)
    ref = np.cumsum(x.astype(np.float64))
    bounds = bench._bounds("cumsum", x, np.float32, ref, SCAN_NAMES)
    assert set(bounds) == set(SCAN_NAMES)
    for name in SCAN_NAMES:  # each variant's own bound (shared where the chains are as long)
        np.testing.assert_array_equal(bounds[name], error_bound("cumsum", x, np.float32, variant=name))
    chains = {v.name: v.rounding_chain(x.size) for v in gpureduce.variants(kind="scan") if v.name in SCAN_NAMES}
    for a in SCAN_NAMES:  # computed once per chain length
        assert all((bounds[a] is bounds[b]) == (chains[a] == chains[b]) for b in SCAN_NAMES)
    assert bounds["cub"].shape == (3000,) and bounds["cub"][0] < bounds["cub"][-1] / 100  # per element
    assert bounds["sequential"][-1] > bounds["cub"][-1]  # a chain of 2999 additions, not a tree


def test_error_arithmetic_is_exact_about_nan_shape_and_chunks():
    ref = np.linspace(-1, 1, 1000)
    got = ref.astype(np.float32)
    bound = np.full(1000, 1e-6)
    whole = bench._bounded_error(got, ref, bound, chunk=10**6)
    assert whole == bench._bounded_error(got, ref, bound, chunk=7) == float(np.max(np.abs(got - ref) / bound))
    assert bench._bounded_error(got, ref, 2e-6, chunk=7) == whole / 2  # a scalar bound broadcasts
    bad = got.copy()
    bad[999] = np.nan  # a NaN the reference does not have is never within any bound
    assert math.isnan(bench._bounded_error(bad, ref, bound, chunk=7))
    both = ref.copy()
    both[3], both[4] = np.nan, np.inf
    assert bench._bounded_error(both, both, bound, chunk=7) == 0.0  # the same NaN and inf on both sides agree
    other = both.copy()
    other[4] = -np.inf
    assert bench._bounded_error(other, both, bound, chunk=7) == math.inf
    ints = np.arange(100)
    assert bench._exact_error(ints, ints, 7) == 0.0
    assert bench._exact_error(ints + (ints == 50), ints, 7) == math.inf
    f = ints.astype(np.float32)
    g = f.copy()
    g[99] = np.nan
    assert math.isnan(bench._exact_error(g, f, 7)) and bench._exact_error(g, g, 7) == 0.0
    assert math.isnan(bench._worst(0.5, math.nan, math.inf)) and bench._worst(0.5, 0.25) == 0.5


# A device simulated on the host: _check_variant's calls, a variant that writes nothing, a memory pool and a
# result slot that keep the last answer

class _SimulatedDevice:
    def __init__(self, lazy, skip_last=False):
        self.lazy, self.skip_last, self.last = lazy, skip_last, None

    def __call__(self, kind, v, gr_op, dev, poison=None):
        op = {"sum": "cumsum", "prod": "cumprod", "min": "cummin", "max": "cummax"}[gr_op] if kind == "scan" else gr_op
        right = _numpy(op, dev)
        if kind == "scan" and poison is not None:
            out = np.frombuffer(bytes([poison[1]]) * (dev.size * poison[0].itemsize), poison[0]).copy()
        else:
            out = None
        if v.name != self.lazy:
            self.last = right
        elif kind == "reduce" or out is None:
            return self.last  # the result slot, or the pool's memory: the previous call's answer
        elif self.skip_last:
            out[:-1] = right[:-1]
            return out
        else:
            return out  # the poison, untouched
        if out is not None:
            out[:] = right
            return out
        return right


def _cases(op, dtype, rng, names, n=3000):
    kind, gr_op = bench.OPERATORS[op]
    x = bench._random(n, dtype, gr_op, rng)
    timing = bench._case(op, x, x, names)
    exact = bench._exact_case(op, n, dtype, rng, timing, names)
    exact.dev = exact.x
    return timing, exact


def _variant(kind, name):
    return next(v for v in gpureduce.variants(kind=kind) if v.name == name)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
@pytest.mark.parametrize("skip_last", [False, True])
def test_check_catches_a_scan_that_writes_nothing(monkeypatch, op, dtype, skip_last, rng):
    timing, exact = _cases(op, dtype, rng, SCAN_NAMES)
    assert timing.poison is not None and exact.poison is not None
    device = _SimulatedDevice("sequential", skip_last)
    monkeypatch.setattr(bench, "_run_once", device)
    err, ok, _ = bench._check_variant(op, _variant("scan", "cub"), timing, exact)
    assert ok and err <= 1
    err, ok, _ = bench._check_variant(op, _variant("scan", "sequential"), timing, exact)
    assert not ok and (math.isnan(err) or err == math.inf)


@pytest.mark.parametrize("op", ["sum", "prod", "min", "max"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
def test_check_catches_a_stale_reduction(monkeypatch, op, dtype, rng):
    """A reduction that writes nothing returns what the result slot holds (the previous variant's right
    answer on the timing data): the exact data's check fails."""
    names = ("cub", "shuffle")
    timing, exact = _cases(op, dtype, rng, names)
    monkeypatch.setattr(bench, "_run_once", _SimulatedDevice("shuffle"))
    assert bench._check_variant(op, _variant("reduce", "cub"), timing, exact)[1]
    err, ok, deterministic = bench._check_variant(op, _variant("reduce", "shuffle"), timing, exact)
    assert not ok and err == math.inf
    # whatever one stale value it returns, one of the checks fails
    for stale in (timing.reference, exact.reference):
        monkeypatch.setattr(bench, "_run_once", lambda *args, value=np.asarray(stale): value.astype(
            bench._result_dtype(op, np.dtype(dtype)))[()])
        assert not bench._check_variant(op, _variant("reduce", "shuffle"), timing, exact)[1]


def test_check_of_a_nondeterministic_variant_judges_both_results(monkeypatch, rng):
    timing, exact = _cases("cumsum", "float32", rng, SCAN_NAMES)
    calls = []

    def second_call_wrong(kind, v, gr_op, dev, poison=None):
        got = np.cumsum(dev)
        calls.append(dev is timing.dev)
        if len(calls) == 3:
            got[7] += 1
        return got

    monkeypatch.setattr(bench, "_run_once", second_call_wrong)
    err, ok, deterministic = bench._check_variant("cumsum", _variant("scan", "cub"), timing, exact)
    assert calls == [True, False, True]  # timing data, exact data, timing data again
    assert not deterministic and not ok and err > 1


def test_bitwise_equal():
    a = np.array([0.0, np.nan, 1.0], np.float32)
    assert bench._bitwise_equal(a, a.copy())
    assert not bench._bitwise_equal(a, np.array([-0.0, np.nan, 1.0], np.float32))  # -0.0 == 0.0, but not bitwise
    assert not bench._bitwise_equal(a, a.astype(np.float64)) and not bench._bitwise_equal(a, a[:2])
    assert bench._bitwise_equal(np.float32(1.5), np.float32(1.5))
    assert bench._bitwise_equal(np.ones(3, np.complex128), np.ones(3, np.complex128))


# ---------------------------------------------------------------- the C helpers' argument checks

class _FakeDevice:
    __cuda_array_interface__ = dict(shape=(4,), typestr="<f4", data=(4096, False), version=3)


def test_c_helpers_check_arguments_before_the_device():
    with pytest.raises(TypeError, match="fn must be callable"):
        _core.time_calls(3, 1)
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        _core.time_calls(lambda: None, 0)
    with pytest.raises(ValueError, match="fill_byte must be None or 0..255"):
        _core.empty((3,), np.float32, 256)
    with pytest.raises(TypeError, match="unsupported dtype"):
        _core.empty((3,), np.dtype("U3"))
    with pytest.raises(TypeError, match="is a device array already"):
        _core.to_device(_FakeDevice())


@pytest.mark.parametrize(
    "text, sizes",
    [("2^10:2^14", [2**10, 2**11, 2**12, 2**13, 2**14]), ("2^10:2^16:3", [2**10, 2**13, 2**16]),
     ("1000,2^20+3,2**4", [1000, 2**20 + 3, 16])],
)
def test_parse_sizes(text, sizes):
    assert parse_sizes(text) == sizes


@pytest.mark.parametrize("bad", ["2^10:1000", "2^12:2^10", "abc", "2^10;import os"])
def test_parse_sizes_rejects(bad):
    with pytest.raises(ValueError):
        parse_sizes(bad)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(op="median"), "unknown op"),
        (dict(variants=["fastest"]), "unknown reduce variant"),
        (dict(dtype="complex64"), "not supported"),
        (dict(dtype="float128x"), "dtype"),
        (dict(repeat=0), "repeat must be a positive int"),
        (dict(repeat=2.5), "repeat must be a positive int"),
        (dict(sizes=[0]), "sizes must be positive"),
        (dict(sizes=[]), "sizes must be positive"),
    ],
)
def test_bad_arguments_fail_before_any_work(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        benchmark(**kwargs)


def test_cli_help_runs():
    from gpureduce.__main__ import main

    with pytest.raises(SystemExit) as e:
        main(["bench", "--help"])
    assert e.value.code == 0
