"""Execute a notebook with a real Jupyter kernel (nbclient + ipykernel), validate it, and write it back.

    python3 .ci/run_notebook.py [examples/explore.ipynb] [--out executed.ipynb] [--timeout 1200]

Every code cell runs in order in one IPython kernel, exactly as "Restart & Run All" in Jupyter would: rich
outputs (HTML tables, PNG figures) come from IPython's own display machinery.  The executed notebook is checked
with ``nbformat.validate`` and written to ``--out`` (default: the notebook itself), also when a cell fails, so
the traceback can be read in it.

Exit status: 0 every cell ran and the result is a valid notebook; 1 a cell raised, timed out or the kernel
died (the notebook is written up to that cell); 2 an output or the executed notebook is not valid nbformat
(nothing written); 3 nbclient/nbformat/ipykernel are not importable.

The kernel is started from a kernel spec this script writes into a temporary JUPYTER_PATH: this Python
(``sys.executable -m ipykernel_launcher``), with this process's environment (PYTHONPATH included), in the
notebook's folder, with the repository root appended to PYTHONPATH (so an in-place build of gpureduce is
found; an installed one works too).  Nothing depends on a registered "python3" kernel spec, so packages
installed with ``pip --target`` work.  IPYTHONDIR and the Jupyter runtime folder are temporary too, so no
profile or startup file of the machine's user changes what the notebook does.

The GPU machine has no Jupyter packages and no network: the wheels (cp312, manylinux x86_64, with every
dependency not already on that machine) are carried in the git-ignored folder .whl/ of the repository root.
Install them from the repository root with

    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site

then run this script (``PYTHONPATH=/tmp/site python3 .ci/run_notebook.py``).  Those wheels
rely on these packages of the machine: packaging, psutil, pygments, python-dateutil, typing-extensions, attrs.
Checked there (Python 3.12.3): the 30 wheels install in 2 s and this script runs the notebook.  To make .whl/
again (about 15 MB; every Requires-Dist of each wheel, markers evaluated for CPython 3.12 on Linux, is either
among them or on the machine):

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
        nbclient==0.11.0 nbformat==5.11.1 ipykernel==7.4.0 asttokens==3.0.2 comm==0.2.3 debugpy==1.8.22 \
        executing==2.3.0 fastjsonschema==2.22.3 ipython==9.18.1 ipython_pygments_lexers==1.1.1 jedi==0.20.1 \
        jsonschema==4.26.0 jsonschema-specifications==2025.9.1 jupyter_client==8.10.0 jupyter_core==5.9.1 \
        matplotlib-inline==0.2.2 nest-asyncio2==1.7.4 parso==0.8.7 pexpect==4.9.0 platformdirs==4.14.7 \
        prompt_toolkit==3.0.53 ptyprocess==0.7.0 pure_eval==0.2.4 pyzmq==27.3.0 referencing==0.37.0 \
        rpds-py==2026.9.1 stack-data==0.6.3 tornado==6.6.1 traitlets==5.16.1 wcwidth==0.9.4
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOK = REPO / "examples" / "explore.ipynb"
KERNEL_NAME = "gpureduce-run-notebook"  # a name no machine registers: always the spec written below


def kernel_environment(tmp: Path) -> None:
    """Point Jupyter at a kernel spec for this interpreter and keep every Jupyter/IPython file under tmp.

    The kernel is a child of this process and inherits os.environ; so these settings reach it too."""
    spec = tmp / "data" / "kernels" / KERNEL_NAME
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python {sys.version_info.major}.{sys.version_info.minor} ({sys.executable})",
        "language": "python",
        "metadata": {"debugger": False},
    }, indent=1))
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(tmp / "data"), os.environ.get("JUPYTER_PATH")]))
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    os.environ["JUPYTER_PLATFORM_DIRS"] = "1"  # jupyter_core's own future default; silences its warning
    os.environ["IPYTHONDIR"] = str(tmp / "ipython")
    os.environ.pop("MPLBACKEND", None)  # let ipykernel pick its inline backend (a shell's "Agg" would hide figures)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(REPO) not in paths:
        paths.append(str(REPO))
    os.environ["PYTHONPATH"] = os.pathsep.join(paths)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("notebook", nargs="?", default=str(DEFAULT_NOTEBOOK), help="default: %(default)s")
    p.add_argument("--out", help="where to write the executed notebook (default: the notebook itself)")
    p.add_argument("--timeout", type=int, default=1200, help="seconds per cell (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        import nbclient
        import nbclient.exceptions
        import nbformat
        import ipykernel  # noqa: F401  (the kernel's package: fail here, not in a kernel that never starts)
    except ImportError as e:
        print(f"run_notebook: {e}. This needs nbclient, nbformat and ipykernel; on the GPU machine install the "
              "carried wheels (see this script's docstring).", file=sys.stderr)
        return 3

    source = Path(args.notebook).resolve()
    out = Path(args.out).resolve() if args.out else source
    nb = nbformat.read(source, as_version=4)
    kernelspec = nb.metadata.get("kernelspec")
    error = None
    with tempfile.TemporaryDirectory(prefix="run_notebook-") as tmp:
        kernel_environment(Path(tmp))
        client = nbclient.NotebookClient(
            nb, timeout=args.timeout, kernel_name=KERNEL_NAME, record_timing=False,
            resources={"metadata": {"path": str(source.parent)}})
        try:
            client.execute()
        except (nbclient.exceptions.CellExecutionError, nbclient.exceptions.CellTimeoutError,
                nbclient.exceptions.DeadKernelError) as e:
            error = e
        except nbformat.ValidationError as e:  # nbclient validates each output as it arrives
            print(f"run_notebook: a cell produced an output that is not valid nbformat, nothing written: {e}",
                  file=sys.stderr)
            return 2
    if kernelspec is not None:  # keep the notebook opening with the usual "python3" kernel in Jupyter
        nb.metadata["kernelspec"] = kernelspec

    try:
        nbformat.validate(nb)
    except nbformat.ValidationError as e:
        print(f"run_notebook: the executed notebook is not valid nbformat, not written: {e}", file=sys.stderr)
        return 2
    nbformat.write(nb, out)
    cells = sum(1 for c in nb.cells if c.cell_type == "code")
    ran = sum(1 for c in nb.cells if c.cell_type == "code" and c.get("execution_count") is not None)
    if error is not None:
        print(f"run_notebook: {type(error).__name__} after {ran} of {cells} code cells; the notebook with its "
              f"outputs so far is in {out}\n{error}", file=sys.stderr)
        return 1
    print(f"run_notebook: executed {ran} code cells of {source} with {sys.executable}; valid; written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
