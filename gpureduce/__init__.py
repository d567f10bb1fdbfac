"""gpureduce: GPU reductions and scans for NumPy and CUDA arrays.

Every classic algorithm of the seed notes is a selectable variant; ``variant="auto"`` (the default) is
the fastest correct one.  ``gpureduce.variants()`` lists them.
"""
from ._locate import use_installed_core

use_installed_core(__path__)
from ._core import CudaError, DeviceArray, OutOfMemoryError  # noqa: E402
from ._registry import Variant
from ._registry import variants as _variants
from .benchmark import BenchmarkResult, benchmark, device_info
from .reductions import all, any, argmax, argmin, count_nonzero, max, mean, min, prod, ptp, reduce, sum
from .nanfunctions import nanargmax, nanargmin, nanmax, nanmean, nanmin, nanprod, nansum
from .moments import nanstd, nanvar, std, var
from .scans import cummax, cummin, cumprod, cumsum, logcumsumexp, nancumprod, nancumsum, scan
from .special import logsumexp
from .segmented import reduceat, segmented_reduce, segmented_scan, segmented_variants
from .grouped import groupby_reduce, groupby_scan
from .linalg import dot, vdot, vector_norm
from ._torch_ops import register_torch_ops, register_if_imported as _register_if_imported

from ._version import __version__  # noqa: E402

_register_if_imported()  # torch.compile keeps gpureduce's calls on tensors in its graph (_torch_ops.py)


def variants(op=None, kind=None):
    """The registered algorithm variants, in declaration order, optionally filtered.

    The list is the one compiled into the extension from ``cuda/abi/variants.def``: every name that a
    ``variant=`` argument accepts, with what the variant supports.

    Parameters
    ----------
    op : str, optional
        Only the variants that implement this function or operator: a reduction ("sum", "prod", "min",
        "max", "mean", "argmin", "argmax", "any", "all", "count_nonzero", "nansum", ...) or a scan ("cumsum", "cumprod",
        "cummax", "cummin", whose variants are the scan variants of its operator).  A flat kernel implements
        the operators of its ``ops`` field; a variant with the "axes" property also implements every other
        operator of its kind through the axis machinery.  An unknown name gives an empty list.
    kind : {"reduce", "scan"}, optional
        Only the variants of this kind.

    Returns
    -------
    list of gpureduce.Variant
        Frozen records with the fields ``index``, ``kind``, ``name``, ``doc`` (one line), ``seed`` (where the
        seed notes teach it), ``deterministic``, ``properties`` (a tuple of "deterministic", "baseline",
        "default", "block_local", "axes"), ``ops`` and ``dtypes`` (the operators and input dtypes of its
        flat kernels; "axes" variants take every dtype), ``rounding`` (its longest chain of floating-point
        roundings, in words) and ``rounding_chain(n, sms=None, flat=True)`` (that chain's length for `n`
        elements: a sum errs by at most that many times ``eps * sum(abs(x))``, typically by its square root
        times that; a scan's last element likewise).

    Raises
    ------
    ValueError
        `kind` is neither "reduce" nor "scan".

    See Also
    --------
    reduce, scan : Take a variant's name as ``variant=``.

    Notes
    -----
    No device is needed: the table is read at import time.

    Examples
    --------
    >>> import gpureduce
    >>> [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties]
    ['cub', 'auto']
    >>> [v.name for v in gpureduce.variants(kind="reduce", op="sum") if not v.deterministic]
    ['atomic_block', 'atomic_warp']
    """
    return _variants(kind=kind, op=op)


def device_count():
    """Number of CUDA devices visible to this process.

    Returns
    -------
    int
        The CUDA runtime's device count (``CUDA_VISIBLE_DEVICES`` applies); 0 on a machine without a GPU
        or an NVIDIA driver, or whose driver is too old for the CUDA runtime gpureduce was built with.

    See Also
    --------
    device_info : The devices' names and properties.

    Notes
    -----
    Importing gpureduce needs no device, but every reduction or scan does: with a count of 0 they raise
    ``gpureduce.CudaError`` naming the cause.

    Examples
    --------
    >>> import gpureduce
    >>> n = gpureduce.device_count()
    >>> n >= 0
    True
    """
    from . import _core

    return _core.device_count()


__all__ = [
    "CudaError", "OutOfMemoryError", "DeviceArray", "Variant", "variants", "device_count",
    "reduce", "sum", "prod", "min", "max", "mean", "argmin", "argmax", "any", "all", "count_nonzero", "ptp",
    "nansum", "nanprod", "nanmin", "nanmax", "nanmean", "nanargmin", "nanargmax", "var", "std", "nanvar", "nanstd",
    "logsumexp", "vector_norm", "dot", "vdot", "reduceat", "segmented_reduce", "segmented_scan", "segmented_variants", "groupby_reduce", "groupby_scan", "scan", "cumsum", "cumprod", "cummax", "cummin", "nancumsum", "nancumprod", "logcumsumexp",
    "benchmark", "BenchmarkResult", "device_info", "register_torch_ops",
]
