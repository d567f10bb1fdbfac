"""benchmarks/bench_axis.py without a GPU: the committed H200 results render again from their JSON, for the
sums and for the cumsums (--op cumsum), with the right headers, floors and file names."""
import json
import os
import sys

import pytest

BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
RESULTS = os.path.join(BENCH, "results")


@pytest.fixture(scope="module")
def bench_axis():
    sys.path.insert(0, BENCH)
    try:
        import bench_axis
        yield bench_axis
    finally:
        sys.path.remove(BENCH)


def _load(name):
    with open(os.path.join(RESULTS, name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("name, op, floor, title", [
    ("axis_h200.json", "sum", "read floor µs", "row and column sums"),
    ("axis_cumsum_h200.json", "cumsum", "copy floor µs", "row and column cumsums"),
])
def test_committed_results_render_again(bench_axis, name, op, floor, title, tmp_path):
    data = _load(name)
    assert data["meta"].get("op", "sum") == op
    cases = [bench_axis.summarize_case(c, data["meta"]["device"]["read_gbps"]) for c in data["cases"]]
    text = bench_axis.render_markdown(data["meta"], cases, full=True)
    assert f"# gpureduce {title} on NVIDIA H200" in text
    assert f"| shape | {op} over |" in text and floor in text
    assert f"`gpureduce.{op}(x, axis=ax)`" in text
    rows = [line for line in text.splitlines() if line.startswith("| (")]
    assert len(rows) == len(cases) == 8
    assert "gpureduce is at least as fast as the better of cupy and torch on" in text
    written = bench_axis.write_outputs(str(tmp_path), data["meta"], cases)
    stem = "axis_h200" if op == "sum" else "axis_cumsum_h200"
    assert [os.path.basename(p) for p in written] == [stem + ext for ext in (".md", ".csv", ".json")]
    with open(written[0], encoding="utf-8") as f:
        assert f.read() == text


def test_render_from_the_command_line(bench_axis, capsys):
    assert bench_axis.main(["--render", os.path.join(RESULTS, "axis_cumsum_h200.json")]) == 0
    out = capsys.readouterr().out
    assert "gpureduce row/column cumsums, float32, on NVIDIA H200" in out
    assert "| (2^20, 2) | columns (axis=0) |" in out


def test_op_must_be_known(bench_axis, capsys):
    with pytest.raises(SystemExit) as e:
        bench_axis.main(["--op", "cumprod", "--render", "x.json"])
    assert e.value.code == 2
    assert "invalid choice: 'cumprod'" in capsys.readouterr().err
