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


# ---------------------------------------------------------------- the correctness arithmetic

def test_rel_error_is_exact_about_nan_shape_and_chunks():
    ref = np.linspace(-1, 1, 1000)
    got = ref.astype(np.float32)
    whole = bench._rel_error(got, ref, 1.0, chunk=10**6)
    assert whole == bench._rel_error(got, ref, 1.0, chunk=7) == float(np.max(np.abs(got - ref)))
    bad = got.copy()
    bad[999] = np.nan  # a NaN the reference does not have is never within any bound
    assert math.isnan(bench._rel_error(bad, ref, 1.0, chunk=7))
    assert not bench._rel_error(bad, ref, 1.0) <= 1.0
    both = ref.copy()
    both[3] = np.nan
    assert bench._rel_error(both, both, 1.0) == 0.0  # the same NaN on both sides is agreement
    assert bench._rel_error(got[:-1], ref, 1.0) == math.inf  # a result of the wrong length is wrong
    assert bench._rel_error(np.float32(2.5), np.float64(2.0), 2.0) == 0.25


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
