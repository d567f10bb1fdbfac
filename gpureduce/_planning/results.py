"""Results in the input's own kind, 0-d ones included: a CuPy input gives a CuPy array, a PyTorch tensor a
tensor, a JAX array a JAX array.  CuPy and PyTorch allocate the result themselves (`result_maker`: their
memory pool and caching allocator, on their current stream, inside a CUDA graph's pool during capture) and
the kernels write into it; other results are gpureduce's DeviceArray, handed over without a copy through
DLPack (its stream handshake orders the consumer's stream after the work).  Inputs whose library cannot take
a result back (a raw ``__cuda_array_interface__`` or DLPack exporter) keep the ``gpureduce.DeviceArray``; host
inputs give NumPy arrays and scalars, which the runner makes itself.

Converters and result makers are chosen once per input type and cached, so the hot path pays a dict lookup.
"""
from __future__ import annotations

import functools
import operator
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


# A result made by the input's library is described by a maker, (allocate, args, pointer, lasting): `allocate(*args)`
# is the new array, `pointer(array)` its device address, all three C callables, so that src/whole_calls.c runs a
# kept call's maker with no Python in between (issue 38); `lasting`: whether later calls of the same layout may use
# the same maker (not one made inside a graph capture: see _torch_maker).
_CUPY_POINTER = operator.attrgetter("data.ptr")


def _torch_maker():
    torch = sys.modules["torch"]
    data_ptr = torch.Tensor.data_ptr
    dtypes = torch_dtypes(torch)
    # A 0-d tensor per (device, dtype) that results are made like: torch.empty_like(template) and
    # template.new_empty(shape) cost a third of torch.empty(shape, dtype=..., device=a.device), whose keywords and
    # torch.device object take longer than the allocation (issue 38's per-call budget).
    templates = {}

    def maker(a, shape, dtype):
        kind = dtypes.get(dtype)
        if kind is None:
            return None
        key = (a.get_device(), kind)
        template = templates.get(key)
        if template is None:
            if torch.cuda.is_current_stream_capturing():  # a graph's pool would hold a kept template
                return functools.partial(torch.empty, dtype=kind, device=a.device), (shape,), data_ptr, False
            template = templates[key] = torch.empty((), dtype=kind, device=a.device)
        if not shape:
            return torch.empty_like, (template,), data_ptr, True
        return template.new_empty, (shape,), data_ptr, True

    return maker


def _cupy_maker():
    ndarray = sys.modules["cupy"].ndarray  # its constructor allocates as cupy.empty does, without the wrapper

    def maker(a, shape, dtype):
        # on the current device, where the work runs (the runner refuses an input on another); no bfloat16 in CuPy
        if dtype.kind not in "biufc":
            return None
        return ndarray, (shape, dtype), _CUPY_POINTER, True

    return maker


_MAKERS = {}


def result_maker(a, shape, dtype):
    """The maker (see above) of a new uninitialised C-ordered array of `shape` and `dtype` from device input `a`'s
    own library (CuPy, PyTorch) on its current stream, for the kernels to write the result into; None where
    gpureduce allocates it (other kinds, dtypes the library lacks)."""
    kind = type(a)
    maker = _MAKERS.get(kind, False)
    if maker is False:
        root = kind.__module__.partition(".")[0]
        maker = _torch_maker() if root == "torch" else _cupy_maker() if root == "cupy" else None
        _MAKERS[kind] = maker
    return None if maker is None else maker(a, shape, dtype)


def allocate_in_kind(a, shape, dtype):
    """(array, its device address): the array result_maker describes, made; None where gpureduce allocates it."""
    maker = result_maker(a, shape, dtype)
    if maker is None:
        return None
    allocate, args, pointer, _ = maker
    try:
        made = allocate(*args)
    except Exception as error:  # the library's out-of-memory error as gpureduce's (a MemoryError), as ours
        if "OutOfMemory" not in type(error).__name__:
            raise
        from .._core import OutOfMemoryError
        raise OutOfMemoryError(f"allocating the result ({shape}, {dtype}) with {type(a).__module__.partition('.')[0]}: "
                               f"{error}") from error
    return made, pointer(made)


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
