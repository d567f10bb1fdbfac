"""gpureduce: GPU reductions and scans for NumPy and CUDA arrays.

Every classic algorithm of the seed notes is a selectable variant; ``variant="auto"`` (the default) is
the fastest correct one.  ``gpureduce.variants()`` lists them.
"""
from ._locate import use_installed_core

use_installed_core(__path__)
from ._core import CudaError, DeviceArray  # noqa: E402
from ._registry import Variant
from ._registry import variants as _variants
from .benchmark import BenchmarkResult, benchmark, device_info
from .reductions import argmax, argmin, max, mean, min, prod, reduce, sum
from .scans import cummax, cummin, cumprod, cumsum, scan

__version__ = "0.1.0"


def variants(op=None, kind=None):
    """The registered variants (name, kind, doc, seed, properties, ops, dtypes), optionally filtered."""
    return _variants(kind=kind, op=op)


def device_count():
    """Number of CUDA devices visible (0 on a machine without a GPU or driver)."""
    from . import _core

    return _core.device_count()


__all__ = [
    "CudaError", "DeviceArray", "Variant", "variants", "device_count",
    "reduce", "sum", "prod", "min", "max", "mean", "argmin", "argmax",
    "scan", "cumsum", "cumprod", "cummax", "cummin",
    "benchmark", "BenchmarkResult", "device_info",
]
