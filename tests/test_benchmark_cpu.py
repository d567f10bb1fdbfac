"""The benchmark helper's result object and argument checks, on synthetic rows: no GPU needed."""
import csv
import io
import json

import pytest

import gpureduce
from gpureduce.benchmark import BenchmarkResult, BenchmarkRow, benchmark, parse_sizes

DEVICE = dict(device=0, name="Synthetic GPU", sm_count=132, l2_bytes=60 << 20, memory_bytes=141 << 30,
              read_gbps=4300.0, copy_gbps=4250.0)


def synthetic():
    rows = []
    for n in (2**10, 2**20):
        for i, (name, us) in enumerate([("interleaved_divergent", 90.0), ("shuffle", 30.0), ("cub", 20.0)]):
            rows.append(BenchmarkRow(name, "sum", n, "float32", us * n / 2**20, us * n / 2**20 * 0.9,
                                     us * n / 2**20 * 1.1, 4 * n / (us * n / 2**20) / 1e3, 50.0 + i,
                                     speedup_step=None if i == 0 else 3.0, speedup_total=1.0 + i,
                                     rel_error=1e-7, correct=True, deterministic=True, repeats=30))
        rows.append(BenchmarkRow("cupy", "sum", n, "float32", 25.0, 24.0, 26.0, 100.0, 40.0, repeats=30, peer=True))
    return BenchmarkResult(rows, DEVICE)


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
