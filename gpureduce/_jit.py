"""The kernels compiled on first use (src/jit.c): filling their disk cache ahead of time.

Everything outside the hot set (cuda/abi/hot_set.def, ``gpureduce._core.hot_set``) compiles with NVRTC the first
time a process needs it, a fraction of a second a kernel (CUB's a few seconds), and is kept in the kernel cache
(``jit_info()["cache_dir"]``); a later process reads it from there in well under a millisecond.  ``warm`` compiles them all for some architectures
at once, in parallel processes, so that no call compiles: on a machine whose GPUs run gpureduce, before going
offline, or where the toolkit is and the GPUs are not (``--arch``).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

from . import _core


def current_arch() -> int:
    """The compute capability of the current device as 75 for sm_75 (gpureduce.CudaError without a device)."""
    major, minor = _core.device_properties()["compute_capability"]
    return major * 10 + minor


def machine_archs() -> list[int]:
    """The architectures of every GPU of this machine (nvidia-smi's compute capabilities, as 90 for sm_90, the
    distinct ones in order), else the current device's (gpureduce.CudaError without one)."""
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            done = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                                  text=True, timeout=30)
            archs = sorted({int(cap.replace(".", "")) for cap in done.stdout.split()
                            if cap.replace(".", "").isdigit()}) if done.returncode == 0 else []
            if archs:
                return archs
        except (OSError, subprocess.SubprocessError):
            pass
    return [current_arch()]


def _compile_share(share, with_pch=False):
    """A worker's share of warm(): (arch, program, name) each compiled (or found) in the cache; how many compiled."""
    return sum(_core.jit_compile(program, name, arch, with_pch)[1] for arch, program, name in share)


def _worker_temporary_folder(folder):
    """A warm worker's TMPDIR: NVRTC's precompiled headers go there, and warm removes it (a pool's worker ends with
    os._exit, which skips the clean-up NVRTC does at a normal exit)."""
    os.environ["TMPDIR"] = folder
    tempfile.tempdir = folder


def _compile_program(work, jobs, on_share):
    """One program's part of warm(): its (arch, program, name) items in shares of neighbouring kernels (one
    Reducer's kernels lie together), in `jobs` processes; on_share(share, compiled) after each."""
    size = max(1, min(64, len(work) // (4 * jobs) or 1))
    shares = [work[i:i + size] for i in range(0, len(work), size)]
    if jobs == 1:
        for share in shares:
            on_share(share, _compile_share(share))
        return
    # NVRTC's precompiled headers in each worker (its later kernels of the program parse ~1 s faster: CUB's), in
    # a temporary folder removed below.  A worker keeps one file per program it compiled (60-200 MB each) until it
    # ends, so a pool serves one program: jobs x 200 MB of $TMPDIR at most, where one pool for all eight programs
    # held up to 700 MB a worker.
    folder = tempfile.mkdtemp(prefix="gpureduce-warm-")
    pool = ProcessPoolExecutor(max_workers=min(jobs, len(shares)), initializer=_worker_temporary_folder,
                               initargs=(folder,))
    try:
        for share, n in zip(shares, pool.map(partial(_compile_share, with_pch=True), shares)):
            on_share(share, n)
    finally:
        pool.shutdown(cancel_futures=True)
        shutil.rmtree(folder, ignore_errors=True)


def warm(archs: list[int], progress=None, jobs: int | None = None, kernels=None) -> dict:
    """Compile every first-use kernel (or `kernels`: (program, name) pairs) for each of `archs` into the disk cache,
    in `jobs` processes (default: the CPUs), one program after another; those already there are read, not
    compiled.  With more than one job, up to about 200 MB of $TMPDIR a job while it runs (NVRTC's precompiled
    headers), removed at the end.  Returns {"kernels", "compiled", "seconds", "cache_dir"}; `progress(done,
    total)` after each share."""
    kernels = _core.jit_kernels() if kernels is None else tuple(kernels)
    work = [(arch, program, name) for arch in archs for program, name in kernels]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(work) or 1))
    started = time.perf_counter()
    counts = {"compiled": 0, "done": 0}

    def on_share(share, compiled):
        counts["compiled"] += compiled
        counts["done"] += len(share)
        if progress:
            progress(counts["done"], len(work))

    by_program = {}
    for item in work:
        by_program.setdefault(item[1], []).append(item)
    for program_work in by_program.values():
        _compile_program(program_work, jobs, on_share)
    return {"kernels": len(work), "compiled": counts["compiled"], "seconds": time.perf_counter() - started,
            "cache_dir": _core.jit_info()["cache_dir"]}
