"""src/stream_host.c's chunking and src/transfer.c's staged copies checked without a GPU (tests/c/stream_host_check.c).

Streaming a host array through the device is mostly host-side bookkeeping: which shape the plan takes (rows,
pieces of a row, slabs of rows), where every chunk starts, which element or row is carried into the next chunk,
where each chunk's result goes home.  The harness compiles stream_host.c (and host_copy.c) against CPU stand-ins
for the CUDA calls and the kernels (deferred, as on a GPU: what is enqueued runs only when an event or the
stream is synchronised), runs 60 streamed reductions and scans of every shape (wide columns strip by strip too;
float16 ones, whose partials and carries are float32), and compares each with the same kernel stand-in run over the
whole input at once; then transfer.c's uploads and downloads make a round
trip of 45 sizes around their boundaries (and just past a multiple of parts x 4096 bytes for every number of
parts host_copy.c may split a copy into), into pageable and pinned destinations.  The kernels are the GPU
suite's.
"""
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]


def cuda_home():
    """The toolkit setup.py would use (its CUDA_HOME rule)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    nvcc = shutil.which("nvcc")
    return Path(nvcc).resolve().parent.parent if nvcc else Path("/usr/local/cuda")


def nvcc_host_check(tmp_path_factory, name):
    """tests/c/`name`.cu built by nvcc against the cuda/ headers (a host program: their rules checked on the CPU),
    or the test skipped where nvcc or a C++ compiler is missing."""
    nvcc = cuda_home() / "bin" / "nvcc"
    if not nvcc.exists() or not shutil.which("c++"):
        pytest.skip("needs the CUDA toolkit's nvcc and a C++ compiler (the build needs both too)")
    exe = tmp_path_factory.mktemp(name) / name
    cmd = [str(nvcc), "-std=c++17", "-arch=sm_75", "-I", str(ROOT / "cuda"), str(ROOT / "tests" / "c" / f"{name}.cu"),
           "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"the check does not build:\n{' '.join(cmd)}\n{done.stderr[-4000:]}"
    return exe


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    cuda_include = cuda_home() / "include"
    if not cc or not (cuda_include / "cuda_runtime_api.h").exists():
        pytest.skip("needs a C compiler and the CUDA toolkit's headers (the build needs both too)")
    if sys.platform != "linux":
        pytest.skip("the harness is built for Linux, as the extension is")
    exe = tmp_path_factory.mktemp("stream_host") / "stream_host_check"
    includes = [sysconfig.get_paths()["include"], np.get_include(), str(cuda_include), str(ROOT / "cuda" / "abi"),
                str(ROOT / "cuda"), str(ROOT / "src")]
    sources = [ROOT / "tests" / "c" / "stream_host_check.c", ROOT / "src" / "stream_host.c",
               ROOT / "src" / "transfer.c", ROOT / "src" / "host_copy.c"]
    cmd = [cc, "-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
           *[f"-I{d}" for d in includes], *map(str, sources), "-lpthread", "-o", str(exe)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"the harness does not build:\n{' '.join(cmd)}\n{done.stderr[-4000:]}"
    assert "warning" not in done.stderr, done.stderr[-4000:]
    return exe


def test_every_streamed_shape_matches_the_whole_array(harness):
    done = subprocess.run([str(harness)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "150 of 150 streamed calls and round trips came out right" in done.stdout, done.stdout
