"""The kernels' Reducers (cuda/primitives/reducers.cuh) run on the host, where their rules are easiest to check
exhaustively: tests/c/nanarg_reducer_check.cu folds NanArgReducer over every small array of NaN, inf, -inf and 1
and compares with NumPy's nanargmin / nanargmax (NaN read as +inf / -inf, the first extreme, -1 for no number).
The GPU suite runs the same Reducers in the kernels (tests/test_nanfunctions_gpu.py)."""
import shutil
import subprocess

import pytest

from test_stream_host_cpu import ROOT, cuda_home


@pytest.fixture(scope="module")
def nanarg_check(tmp_path_factory):
    nvcc = cuda_home() / "bin" / "nvcc"
    if not nvcc.exists() or not shutil.which("c++"):
        pytest.skip("needs the CUDA toolkit's nvcc and a C++ compiler (the build needs both too)")
    exe = tmp_path_factory.mktemp("reducers") / "nanarg_reducer_check"
    cmd = [str(nvcc), "-std=c++17", "-arch=sm_75", "-I", str(ROOT / "cuda"),
           str(ROOT / "tests" / "c" / "nanarg_reducer_check.cu"), "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the check does not build:\n{' '.join(cmd)}\n{done.stderr[-4000:]}"
    return exe


def test_nanarg_reducer_follows_numpy(nanarg_check):
    done = subprocess.run([str(nanarg_check)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for name in ("nanargmin float32", "nanargmax float32", "nanargmin float64", "nanargmax float64"):
        assert f"{name}: 0 bad of 5460" in done.stdout, done.stdout
