"""DLPack intake checks that need no GPU: an object whose __dlpack_device__() says CPU is read as a host
array; a foreign device type, a broken __dlpack_device__ and a __dlpack__ that returns no capsule are
refused (TypeError / ValueError naming the protocol) before any device work, so that a machine without a GPU
raises these errors and not "no CUDA device"."""
import re

import numpy as np
import pytest

import gpureduce
from conftest import HAVE_GPU, DLPackOnly
from gpureduce.testing import assert_matches_numpy

DTYPES = ["float32", "int32", "float64"]
# (function, keyword arguments): reductions over everything and along an axis, scans flattened and along one
CALLS = [("sum", {}), ("sum", dict(axis=0)), ("max", dict(axis=1, keepdims=True)), ("argmin", dict(axis=0)),
         ("mean", dict(axis=1)), ("cumsum", {}), ("cummax", dict(axis=1))]
CALL_IDS = ["-".join([op] + [f"{k}={v}" for k, v in kw.items()]) for op, kw in CALLS]


class Claims(DLPackOnly):
    """Its __dlpack_device__ returns `device` (or raises it, where it is an exception class)."""

    def __init__(self, array, device):
        super().__init__(array)
        self.device = device

    def __dlpack_device__(self):
        if isinstance(self.device, type) and issubclass(self.device, Exception):
            raise self.device("the driver went away")
        return self.device


class NotACapsule(DLPackOnly):
    """A CPU DLPack exporter whose __dlpack__ returns `payload` instead of a PyCapsule."""

    def __init__(self, array, payload):
        super().__init__(array)
        self.payload = array if payload is None else payload

    def __dlpack__(self, **kwargs):
        return self.payload


def host(dtype, n=257):
    return (np.arange(3 * n).reshape(3, n) % 17 - 8).astype(dtype)


@pytest.mark.parametrize("n", [1, 257])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, kwargs", CALLS, ids=CALL_IDS)
def test_cpu_dlpack_object_is_read_as_a_host_array(op, kwargs, dtype, n):
    """DLPack device (1, 0) is host memory, read like a NumPy array: without a GPU the call gets past intake
    to CudaError "no CUDA device is available" (not a TypeError); with one it gives NumPy's answer as
    NumPy's types (ndarray, or a NumPy scalar for a 0-d result)."""
    x = DLPackOnly(host(dtype, n))
    if not HAVE_GPU:
        with pytest.raises(gpureduce.CudaError, match="no CUDA device is available"):
            getattr(gpureduce, op)(x, **kwargs)
        return
    result = assert_matches_numpy(op, x, **kwargs)  # a 0-d result is checked to be a NumPy scalar there
    assert isinstance(result, np.generic) or type(result) is np.ndarray, type(result)


@pytest.mark.parametrize("op, kwargs", CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("device", [(10, 0), (4, 0), (8, 0)], ids=["rocm", "opencl", "metal"])
def test_foreign_device_type_is_a_type_error(device, op, kwargs):
    """Neither CPU (1) nor CUDA (2): a TypeError that says DLPack and names the device type number."""
    with pytest.raises(TypeError) as e:
        getattr(gpureduce, op)(Claims(host("float32"), device), **kwargs)
    message = str(e.value)
    assert "DLPack" in message
    assert re.search(rf"\b{device[0]}\b", message), f"the device type {device[0]} is not named: {message!r}"


@pytest.mark.parametrize("op, kwargs", CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("device", [RuntimeError, None, 1, "cpu"],
                         ids=["raises", "None", "int", "str"])
def test_broken_dlpack_device(device, op, kwargs):
    """__dlpack_device__ must return a (device_type, device_id) tuple: raising or anything else is a TypeError
    or ValueError that names __dlpack_device__."""
    with pytest.raises((TypeError, ValueError), match="__dlpack_device__"):
        getattr(gpureduce, op)(Claims(host("float64"), device), **kwargs)


@pytest.mark.parametrize("op, kwargs", CALLS, ids=CALL_IDS)
@pytest.mark.parametrize("payload", [None, object(), b"dltensor", 7], ids=["the-array", "object", "bytes", "int"])
def test_dlpack_that_returns_no_capsule(payload, op, kwargs):
    """__dlpack__ must return a PyCapsule (named "dltensor" / "dltensor_versioned"): anything else, even the
    array itself, is a TypeError that names __dlpack__."""
    with pytest.raises(TypeError, match="__dlpack__"):
        getattr(gpureduce, op)(NotACapsule(host("int32"), payload), **kwargs)
