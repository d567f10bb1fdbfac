"""Results in the input's own kind, 0-d ones included: a CuPy input gives a CuPy array, a PyTorch tensor a
tensor, a JAX array a JAX array.  CuPy and PyTorch allocate the result themselves (`allocate_in_kind`: their
memory pool and caching allocator, on their current stream, inside a CUDA graph's pool during capture) and
the kernels write into it; other results are gpureduce's DeviceArray, handed over without a copy through
DLPack (its stream handshake orders the consumer's stream after the work).  Inputs whose library cannot take
a result back (a raw ``__cuda_array_interface__`` or DLPack exporter) keep the ``gpureduce.DeviceArray``; host
inputs give NumPy arrays and scalars, which the runner makes itself.

Converters and allocators are chosen once per input type and cached, so the hot path pays a dict lookup.
"""
from __future__ import annotations

import sys

import numpy as np


def _from_module(name, attr):
    """The function `attr` of the already-imported module `name` (an input of that kind proves it is)."""
    module = sys.modules.get(name)
    return getattr(module, attr, None) if module is not None else None


def _converter(kind):
    """The DeviceArray -> input-kind function for inputs of type `kind`, or None to keep the DeviceArray."""
    if issubclass(kind, np.ndarray) or kind.__module__ in ("builtins", "gpureduce"):
        return None
    root = kind.__module__.partition(".")[0]
    if root == "cupy":
        return _from_module("cupy", "from_dlpack")
    if root == "torch":
        return _torch_converter()
    if root in ("jax", "jaxlib"):
        return _from_module("jax.dlpack", "from_dlpack") or _from_module("jax.numpy", "from_dlpack")
    namespace = getattr(kind, "__array_namespace__", None)  # any other array API library
    if namespace is not None:
        return _array_api_from_dlpack
    return None


def _torch_converter():
    """PyTorch's from_dlpack is Python that asks for the current stream object (several microseconds); its C
    import and the raw handle of the current stream do the same: our __dlpack__ orders that stream after the
    result's (nothing to do when the work ran there, as it does for a tensor input: src/operand.c)."""
    torch = sys.modules["torch"]
    from_capsule = getattr(torch._C, "_from_dlpack", None)
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if from_capsule is None or raw_stream is None:
        return torch.from_dlpack

    def convert(result):
        return from_capsule(result.__dlpack__(stream=raw_stream(result.device) or 1))

    return convert


def _array_api_from_dlpack(result, _a):
    return _a.__array_namespace__().from_dlpack(result)


_CONVERTERS = {}


def in_kind_of(a):
    """The function that turns a DeviceArray result into `a`'s kind, or None when the result is final."""
    kind = type(a)
    try:
        return _CONVERTERS[kind]
    except KeyError:
        pass
    convert = _converter(kind)
    # a host result (an ndarray, a NumPy scalar: the input was read on the host) is final
    if convert is _array_api_from_dlpack:
        post = lambda r: _array_api_from_dlpack(r, a) if not isinstance(r, (np.ndarray, np.generic)) else r  # noqa: E731
    elif convert is not None:
        post = lambda r: convert(r) if not isinstance(r, (np.ndarray, np.generic)) else r  # noqa: E731
    else:
        post = None
    if convert is not _array_api_from_dlpack:  # that one binds `a`: not cached
        _CONVERTERS[kind] = post
    return post


def torch_dtypes(torch):
    """{NumPy dtype: torch.dtype} for each of gpureduce's dtypes that this PyTorch has (by name; bfloat16 is
    ml_dtypes' on the NumPy side)."""
    from .operands import BFLOAT16, DTYPES
    kinds = {dt: torch.bfloat16 if dt == BFLOAT16 else getattr(torch, dt.name, None) for dt in DTYPES}
    return {dt: kind for dt, kind in kinds.items() if isinstance(kind, torch.dtype)}


def _torch_allocator():
    torch = sys.modules["torch"]
    dtypes = torch_dtypes(torch)
    # A 0-d tensor per (device, dtype) that results are made like: torch.empty_like(template) and
    # template.new_empty(shape) cost a third of torch.empty(shape, dtype=..., device=a.device), whose keywords and
    # torch.device object take longer than the allocation (issue 38's per-call budget).
    templates = {}

    def allocate(a, shape, dtype):
        kind = dtypes.get(dtype)
        if kind is None:
            return None
        key = (a.get_device(), kind)
        template = templates.get(key)
        if template is None:
            if torch.cuda.is_current_stream_capturing():  # a graph's pool would hold a kept template
                made = torch.empty(shape, dtype=kind, device=a.device)
                return made, made.data_ptr()
            template = templates[key] = torch.empty((), dtype=kind, device=a.device)
        made = torch.empty_like(template) if not shape else template.new_empty(shape)
        return made, made.data_ptr()

    return allocate


def _cupy_allocator():
    ndarray = sys.modules["cupy"].ndarray  # its constructor allocates as cupy.empty does, without the wrapper

    def allocate(a, shape, dtype):
        # on the current device, where the work runs (the runner refuses an input on another); no bfloat16 in CuPy
        if dtype.kind not in "biufc":
            return None
        made = ndarray(shape, dtype)
        return made, made.data.ptr

    return allocate


_ALLOCATORS = {}


def allocate_in_kind(a, shape, dtype):
    """(array, its device address): a new uninitialised C-ordered array of `shape` and `dtype` from device input
    `a`'s own library (CuPy, PyTorch) on its current stream, for the kernels to write the result into; None where
    gpureduce allocates it (other kinds, dtypes the library lacks)."""
    kind = type(a)
    allocate = _ALLOCATORS.get(kind, False)
    if allocate is False:
        root = kind.__module__.partition(".")[0]
        allocate = _torch_allocator() if root == "torch" else _cupy_allocator() if root == "cupy" else None
        _ALLOCATORS[kind] = allocate
    if allocate is None:
        return None
    try:
        return allocate(a, shape, dtype)
    except Exception as error:  # the library's out-of-memory error as gpureduce's (a MemoryError), as ours
        if "OutOfMemory" not in type(error).__name__:
            raise
        from .._core import OutOfMemoryError
        raise OutOfMemoryError(f"allocating the result ({shape}, {dtype}) with {type(a).__module__.partition('.')[0]}: "
                               f"{error}") from error


def host_in_kind_of(a, host):
    """A small host array (a side result, such as logsumexp's sign) in `a`'s kind: copied to `a`'s device by `a`'s
    own library (CuPy, PyTorch, JAX), else left a NumPy array."""
    root = type(a).__module__.split(".")[0]
    if root == "cupy":
        return _from_module("cupy", "asarray")(host)
    if root == "torch":
        return _from_module("torch", "as_tensor")(host, device=a.device)
    if root in ("jax", "jaxlib"):
        return _from_module("jax.numpy", "asarray")(host)
    return host
