"""CPU checks of examples/explore.ipynb: a valid notebook (Jupyter opens it without a warning), with the cells
the README promises, none of which needs more than NumPy and gpureduce to run; and the kernel start of
.ci/run_notebook.py, where nbclient and ipykernel are installed.

The notebook itself is executed on the GPU machine (.ci/run_notebook.py); here nothing runs on a GPU.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "examples" / "explore.ipynb"
RUNNER = ROOT / ".ci" / "run_notebook.py"
NO_NBFORMAT = "nbformat is not installed (pip install nbformat; it belongs to the test extra)"


def _text(value):
    return "".join(value) if isinstance(value, list) else value


def _notebook():
    return json.loads(NOTEBOOK.read_text(encoding="utf-8"))


def _code_cells():
    return [_text(c["source"]) for c in _notebook()["cells"] if c["cell_type"] == "code"]


def _calls(keyword):
    """Code lines that call gpureduce with `keyword` (e.g. "axis=")."""
    pattern = re.compile(r"gpureduce\.\w+\(.*\b" + re.escape(keyword))
    return [line for src in _code_cells() for line in src.splitlines() if pattern.search(line)]


def test_notebook_is_valid_nbformat():
    try:
        import nbformat
    except ImportError:
        pytest.skip(NO_NBFORMAT)
    nbformat.validate(_notebook())  # the raw JSON: nbformat.read could repair what Jupyter would warn about


def test_outputs_hold_only_text():
    """What nbformat's schema demands of every output, checked without nbformat: mime bundles hold strings
    (a text/html of None, as a Figure's _repr_html_ gives, is what made Jupyter warn), streams hold text."""
    for index, cell in enumerate(_notebook()["cells"]):
        for output in cell.get("outputs", []):
            kind = output["output_type"]
            assert kind in ("stream", "display_data", "execute_result", "error"), (index, kind)
            if kind == "stream":
                assert isinstance(_text(output["text"]), str), (index, output)
            for mime, value in output.get("data", {}).items():
                if mime.endswith("json"):
                    continue
                assert isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)), \
                    f"cell {index}: {mime} holds {type(value).__name__}"


@pytest.mark.parametrize("keyword", ["axis=", "keepdims=True", "where=", "initial="])
def test_cells_for_numpys_arguments(keyword):
    assert _calls(keyword), f"no gpureduce call with {keyword} in the notebook"


def test_axis_results_compared_with_numpy():
    compared = [src for src in _code_cells() if re.search(r"np\.\w+\(.*axis=", src) and "gpureduce." in src]
    assert compared, "no cell compares a gpureduce axis reduction with NumPy's"


@pytest.mark.parametrize("library, module", [("CuPy", "cupy"), ("PyTorch", "torch")])
def test_zero_copy_cells_are_optional(library, module):
    """A cell for each device library: guarded (the notebook runs with NumPy and gpureduce alone), saying so
    when the library is missing, passing the library's arrays to gpureduce and showing that array results come
    back as the library's own arrays (gpureduce hands them over zero-copy)."""
    cells = [src for src in _code_cells() if re.search(rf"^\s*import {module}\b", src, re.M)]
    assert cells, f"no {library} cell"
    for src in cells:
        assert "except ImportError" in src, f"a cell imports {module} without a guard:\n{src}"
    src = cells[0]
    assert re.search(r"print\(.*not installed", src), f"the {library} cell prints no note when {module} is missing"
    assert "gpureduce." in src, f"the {library} cell does not call gpureduce"
    assert "type(" in src, f"the {library} cell does not show the kind of array a result is"
    if module == "torch":
        assert "torch.cuda.is_available()" in src


def test_benchmark_and_plot_cells_kept():
    code = "\n".join(_code_cells())
    assert code.count("gpureduce.benchmark(") >= 2
    assert ".plot()" in code


def _run_notebook(tmp_path, cells):
    nbformat = pytest.importorskip("nbformat", reason=NO_NBFORMAT)
    for name in ("nbclient", "ipykernel"):
        pytest.importorskip(name, reason=f"{name} is not installed: run_notebook.py's kernel start is not tested")
    from nbformat.v4 import new_code_cell, new_notebook

    source, out = tmp_path / "tiny.ipynb", tmp_path / "tiny.out.ipynb"
    nb = new_notebook(cells=[new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, source)
    proc = subprocess.run([sys.executable, str(RUNNER), str(source), "--out", str(out), "--timeout", "120"],
                          capture_output=True, text=True, timeout=300)
    return proc, (nbformat.read(out, as_version=4) if out.exists() else None)


def test_run_notebook_starts_a_kernel_on_this_python(tmp_path):
    proc, nb = _run_notebook(tmp_path, ["import sys, os\nprint(sys.executable)\nprint(os.getcwd())", "6 * 7"])
    assert proc.returncode == 0, proc.stderr
    first, second = nb.cells[0].outputs, nb.cells[1].outputs
    assert first[0]["text"].splitlines() == [sys.executable, str(tmp_path)]
    assert second[0]["data"]["text/plain"] == "42"
    assert nb.metadata["kernelspec"]["name"] == "python3"  # the notebook's own, not the runner's


def test_run_notebook_fails_on_a_cell_error(tmp_path):
    proc, nb = _run_notebook(tmp_path, ["1 / 0", "print('not reached')"])
    assert proc.returncode == 1
    assert "ZeroDivisionError" in proc.stderr
    assert nb.cells[0].outputs[0]["output_type"] == "error" and nb.cells[1].execution_count is None
