"""The kernels' Reducers (cuda/primitives/reducers.cuh) run on the host, where their rules are easiest to check
exhaustively: tests/c/arg_reducer_check.cu folds ArgReducer and NanArgReducer over every small array of NaN, inf,
-inf and 1 and compares with NumPy's argmin / argmax (the first NaN, else the first extreme) and nanargmin /
nanargmax (NaN read as +inf / -inf, the first extreme, -1 for no number), each folded element by element
(fold_element: fold_at), left to right through combine, and as a tree.
The GPU suite runs the same Reducers in the kernels (tests/test_nanfunctions_gpu.py).  The type traits and limits the
kernels use (cuda/primitives/traits.cuh) are checked against the standard library's (tests/c/traits_check.cu)."""
import subprocess

import pytest

from test_stream_host_cpu import nvcc_host_check


@pytest.fixture(scope="module")
def arg_check(tmp_path_factory):
    return nvcc_host_check(tmp_path_factory, "arg_reducer_check")


def test_arg_reducers_follow_numpy(arg_check):
    done = subprocess.run([str(arg_check)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    for name in ("nanargmin float32", "nanargmax float32", "nanargmin float64", "nanargmax float64",
                 "argmin float32", "argmax float32", "argmin float64", "argmax float64"):
        assert f"{name}: 0 bad of 5460" in done.stdout, done.stdout


def test_the_kernels_traits_are_the_standards(tmp_path_factory):
    """cuda/primitives/traits.cuh's traits and limits, which the kernels use instead of libcu++'s (whose parse was
    most of a first-use compile), agree with the standard library's for every element type (tests/c/traits_check.cu:
    static_asserts, then the limits' bits)."""
    exe = nvcc_host_check(tmp_path_factory, "traits_check")
    done = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "traits: all agree" in done.stdout, done.stdout + done.stderr
