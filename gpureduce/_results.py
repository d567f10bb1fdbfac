"""Array results in the input's own kind: a CuPy input gives a CuPy array, a PyTorch tensor a tensor, a JAX
array a JAX array, each a zero-copy view of gpureduce's DeviceArray through DLPack (its stream handshake
orders the consumer's stream after the work).  Inputs whose library cannot take a result back (a raw
``__cuda_array_interface__`` or DLPack exporter) keep the ``gpureduce.DeviceArray``; host inputs give NumPy
arrays, which the runner makes itself.

The converter is chosen once per input type and cached, so the hot path pays one dict lookup.
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
    if convert is _array_api_from_dlpack:
        post = lambda r: _array_api_from_dlpack(r, a) if not isinstance(r, np.ndarray) else r  # noqa: E731
    elif convert is not None:
        post = lambda r: convert(r) if not isinstance(r, np.ndarray) else r  # noqa: E731
    else:
        post = None
    if convert is not _array_api_from_dlpack:  # that one binds `a`: not cached
        _CONVERTERS[kind] = post
    return post


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
