"""The kernels compiled on first use (src/jit.c): filling their disk cache ahead of time.

Everything outside the hot set (cuda/abi/hot_set.def) compiles with NVRTC the first time a process needs it, about
a second each, and is kept in the kernel cache (``jit_info()["cache_dir"]``); a later process reads it from there.
``warm`` compiles them all for some architectures at once, so that no call compiles: on a machine whose GPUs run
gpureduce, before going offline, or where the toolkit is and the GPUs are not (``--arch``).
"""
from __future__ import annotations

import time

from . import _core


def current_arch() -> int:
    """The compute capability of the current device as 75 for sm_75 (gpureduce.CudaError without a device)."""
    major, minor = _core.device_properties()["compute_capability"]
    return major * 10 + minor


def warm(archs: list[int], progress=None) -> dict:
    """Compile every first-use kernel for each of `archs` into the disk cache (those already there are read, not
    compiled): {"kernels", "compiled", "seconds", "cache_dir"}.  `progress(done, total)` after each."""
    kernels = _core.jit_kernels()
    total, compiled, started = len(kernels) * len(archs), 0, time.perf_counter()
    for i, (arch, (program, name)) in enumerate(((a, k) for a in archs for k in kernels), 1):
        compiled += _core.jit_compile(program, name, arch)[1]
        if progress:
            progress(i, total)
    return {"kernels": total, "compiled": compiled, "seconds": time.perf_counter() - started,
            "cache_dir": _core.jit_info()["cache_dir"]}
