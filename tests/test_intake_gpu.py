"""Intake on the GPU: NumPy arrays, __cuda_array_interface__ objects and DLPack-only objects are read in place
and give NumPy's answers; results come back in the input's own kind (NumPy, CuPy, PyTorch, JAX;
gpureduce.DeviceArray for an object exporting only a protocol; a NumPy scalar for every 0-d result; out=
itself when given); producer streams are honoured; xarray and JAX arrays work.

Values are checked on host copies with gpureduce.testing.assert_matches_numpy (integers and min/max/arg*
exactly, floats within gpureduce.testing.error_bound).  Every out= starts poisoned (NaN / -1), so an element
left unwritten fails.
"""
import numpy as np
import pytest

import gpureduce
from conftest import _cupy, _torch
from gpureduce import _core
from gpureduce.testing import assert_matches_numpy, to_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["float32", "int32", "float64"]
SIZES = [0, 1, 255, 256, 257, 4097]  # either side of a 256-thread block, and one past a 4096-element tile
SHAPE = (33, 257)  # 2-d inputs: the last axis crosses a block boundary
STREAM_N = 2**24  # large enough that a reader not ordered after the producer sees unfinished data


class DLPackOnly:
    """Exports DLPack and nothing else (no __cuda_array_interface__, no __array__), forwarding to `array`.

    A consumer asking a device array for dl_device=(1, 0) (numpy.from_dlpack(x, device="cpu"), which
    gpureduce.testing.to_numpy uses for NumPy's side) gets a host copy, as the DLPack spec lets a producer
    make; gpureduce itself must read the device memory in place."""

    def __init__(self, array):
        self.array = array

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        kwargs = {k: v for k, v in kwargs.items() if v is not None}
        if kwargs.get("dl_device", (0,))[0] == 1 and self.__dlpack_device__()[0] != 1:
            return to_numpy(self.array).__dlpack__(**{k: v for k, v in kwargs.items() if k != "stream"})
        return self.array.__dlpack__(**kwargs)


class CAIOnly:
    """Exports __cuda_array_interface__ and nothing else."""

    def __init__(self, array):
        self.array = array

    @property
    def __cuda_array_interface__(self):
        return self.array.__cuda_array_interface__


# input kind -> function(host ndarray) -> the same values as that kind
MAKE = {
    "numpy": lambda h: h,
    "dlpack-only-cpu": DLPackOnly,  # __dlpack_device__() == (1, 0): a host array
    "cupy": lambda h: _cupy().asarray(h),
    "cai-only": lambda h: CAIOnly(_cupy().asarray(h)),
    "dlpack-only": lambda h: DLPackOnly(_cupy().asarray(h)),
    "torch": lambda h: _torch().from_numpy(np.ascontiguousarray(h)).cuda(),
    "torch-dlpack-only": lambda h: DLPackOnly(_torch().from_numpy(np.ascontiguousarray(h)).cuda()),
}
KINDS = list(MAKE)


def data(rng, dtype, shape):
    """Uniform in [-1, 1) for floats, integers in [-1000, 1000) (their sums stay far from overflow)."""
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-1, 1, shape).astype(dtype)
    return rng.integers(-1000, 1000, shape).astype(dtype)


def poison(dtype):
    return np.nan if np.dtype(dtype).kind == "f" else -1


def assert_kind(result, x, kind):
    """An array result is of the input's kind: NumPy for host inputs, DeviceArray for bare protocol objects."""
    what = f"a {kind} input gave a {type(result).__name__}"
    if kind in ("numpy", "dlpack-only-cpu"):
        assert type(result) is np.ndarray, what
    elif kind == "cupy":
        assert isinstance(result, _cupy().ndarray) and result.device == x.device, what
    elif kind == "torch":
        assert isinstance(result, _torch().Tensor) and result.device == x.device, what
    else:
        assert type(result) is gpureduce.DeviceArray, what


# ---------------------------------------------------------------- DLPack-only device arrays

@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", ["sum", "min", "argmax", "cumsum", "cummax"])
def test_dlpack_only_1d_matches_numpy(op, dtype, n, rng):
    """A DLPack-only CuPy array around block boundaries: NumPy's values (and NumPy's ValueError for min and
    argmax of nothing); a reduction gives a 0-d DeviceArray, a scan a DeviceArray."""
    result = assert_matches_numpy(op, MAKE["dlpack-only"](data(rng, dtype, n)))
    if result is not None:  # (None where NumPy raises)
        assert type(result) is gpureduce.DeviceArray


AXIS_CASES = [
    ("sum", dict(axis=0)),
    ("sum", dict(axis=1, keepdims=True)),
    ("sum", dict(axis=0, dtype="float64")),
    ("sum", dict(axis=1, where="mask")),
    ("max", dict(axis=0, where="mask", initial=-5)),
    ("mean", dict(axis=-1)),
    ("argmin", dict(axis=0, keepdims=True)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op, kwargs", AXIS_CASES, ids=["-".join([op] + [f"{k}={v}" for k, v in kw.items()])
                                                         for op, kw in AXIS_CASES])
def test_dlpack_only_axis_reductions(op, kwargs, dtype, rng):
    """axis=, keepdims=, dtype=, where= (a CuPy mask) and initial= on a DLPack-only input, as NumPy."""
    if kwargs.get("where") == "mask":
        kwargs = {**kwargs, "where": _cupy().asarray(rng.random(SHAPE) < 0.7)}
    result = assert_matches_numpy(op, MAKE["dlpack-only"](data(rng, dtype, SHAPE)), **kwargs)
    assert type(result) is gpureduce.DeviceArray


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1, -1])
@pytest.mark.parametrize("op", ["cumsum", "cummax", "cummin"])
def test_dlpack_only_scans(op, axis, dtype, rng):
    """Scans of a DLPack-only 2-d input: axis=None flattens in C order like numpy.cumsum, axis=k scans along k."""
    result = assert_matches_numpy(op, MAKE["dlpack-only"](data(rng, dtype, SHAPE)), axis=axis)
    assert type(result) is gpureduce.DeviceArray


# ---------------------------------------------------------------- results in the input's kind

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_array_results_come_back_in_the_inputs_kind(kind, dtype, rng):
    """axis= reductions and scans return the input's kind (torch: same device, NumPy's dtype), with NumPy's values."""
    x = MAKE[kind](data(rng, dtype, SHAPE))
    for op, kwargs in [("sum", dict(axis=0)), ("argmin", dict(axis=1)), ("cumsum", {}), ("cummax", dict(axis=0))]:
        assert_kind(assert_matches_numpy(op, x, **kwargs), x, kind)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kind", KINDS)
def test_0d_results_are_of_the_inputs_kind(kind, dtype, rng):
    """A reduction over every axis is a numpy.generic for a host input, as NumPy's own, and a 0-d array of the
    input's kind for a device input, as its library's own (issue 38: no wait for the device)."""
    x = MAKE[kind](data(rng, dtype, SHAPE))
    for op, kwargs in [("sum", {}), ("max", {}), ("argmax", {}), ("mean", {}), ("sum", dict(axis=(0, 1)))]:
        result = assert_matches_numpy(op, x, **kwargs)
        if kind in ("numpy", "dlpack-only-cpu"):
            assert isinstance(result, np.generic), f"{op} of a {kind} input gave a {type(result).__name__}"
        else:
            assert_kind(result, x, kind)
            assert tuple(result.shape) == ()


OUT_CASES = {"sum": (np.sum, dict(axis=0)), "argmax": (np.argmax, dict(axis=1)),
             "cumsum": (np.cumsum, dict(axis=1)), "cummin": (lambda a: np.minimum.accumulate(a.ravel()), {})}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(OUT_CASES))
@pytest.mark.parametrize("kind", KINDS)
def test_out_is_written_and_returned(kind, op, dtype, rng):
    """out= of the input's kind (CAI-only and DLPack-only wrappers included), prefilled with NaN / -1: every
    element gets NumPy's value, and out= itself is returned (NumPy's contract)."""
    host = data(rng, dtype, SHAPE)
    numpy_function, kwargs = OUT_CASES[op]
    ref = numpy_function(host, **kwargs)
    out_kind = "numpy" if kind == "dlpack-only-cpu" else kind
    out = MAKE[out_kind](np.full(ref.shape, poison(ref.dtype), ref.dtype))
    assert assert_matches_numpy(op, MAKE[kind](host), out=out, **kwargs) is out


# ---------------------------------------------------------------- streams

def _on_a_new_stream(library):
    """(stream context, int32 zeros of STREAM_N elements made inside it) for `library`."""
    if library == "torch":
        torch = _torch()
        return torch.cuda.stream(torch.cuda.Stream()), lambda: torch.zeros(STREAM_N, dtype=torch.int32, device="cuda")
    cupy = _cupy()
    return cupy.cuda.Stream(non_blocking=True), lambda: cupy.zeros(STREAM_N, dtype=cupy.int32)


@pytest.mark.parametrize("wrap", [lambda a: a, DLPackOnly], ids=["native", "dlpack-only"])
@pytest.mark.parametrize("library", ["torch", "cupy"])
def test_input_produced_on_a_non_default_stream(library, wrap):
    """Produced on a busy non-default stream and consumed there: the scan waits for the producer (CAI's
    "stream" / DLPack's stream handshake) and its result is ready on that stream."""
    context, zeros = _on_a_new_stream(library)
    with context:
        x = zeros()
        for _ in range(20):  # keep the stream busy: an unordered reader sees fewer than 20 additions
            x += 1
        result = gpureduce.cumsum(wrap(x))
        got = to_numpy(result)
    assert got.dtype == np.int64  # NumPy's cumsum of int32
    np.testing.assert_array_equal(got, 20 * np.arange(1, STREAM_N + 1, dtype=np.int64))


# ---------------------------------------------------------------- xarray and JAX

@pytest.mark.parametrize("dtype", DTYPES)
def test_xarray_reduce_stays_on_cupy(dtype, rng):
    """DataArray.reduce(gpureduce.sum, dim="x") calls gpureduce.sum(data, axis=0): CuPy data stays CuPy,
    with the values of the direct call (checked against NumPy) and NumPy's dims."""
    xr = pytest.importorskip("xarray")
    cupy = _cupy()
    da = xr.DataArray(cupy.asarray(data(rng, dtype, SHAPE)), dims=("x", "y"))
    reduced = da.reduce(gpureduce.sum, dim="x")
    assert reduced.dims == ("y",)
    assert isinstance(reduced.data, cupy.ndarray)
    direct = assert_matches_numpy("sum", da.data, axis=0)  # `auto` is deterministic: the same bits
    np.testing.assert_array_equal(cupy.asnumpy(reduced.data), cupy.asnumpy(direct))


@pytest.fixture
def jax_gpu():
    """(jax, its first GPU) with 64-bit types on, so that arrays hold NumPy's dtypes (float64, int64 indices)."""
    jax = pytest.importorskip("jax")
    try:
        gpus = jax.devices("gpu")
    except RuntimeError:
        gpus = []
    if not gpus:
        pytest.skip("jax without a GPU backend")
    before = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        yield jax, gpus[0]
    finally:
        jax.config.update("jax_enable_x64", before)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("op", ["sum", "max", "argmax", "cumsum"])
def test_jax_gpu_arrays(jax_gpu, op, axis, dtype, rng):
    """jax.numpy arrays on the GPU: NumPy's values; results, 0-d ones too, are jax.Arrays on that GPU."""
    jax, gpu = jax_gpu
    x = jax.device_put(data(rng, dtype, SHAPE), gpu)
    assert x.dtype == np.dtype(dtype)
    result = assert_matches_numpy(op, x, axis=axis)
    assert isinstance(result, jax.Array), f"a jax input gave a {type(result).__name__}"
    assert result.devices() == {gpu}


def test_a_tensor_that_requires_grad_is_read():
    """torch.sum reads a tensor that requires grad; so does gpureduce (through a detached view of it:
    PyTorch's DLPack export refuses the tensor itself)."""
    torch = _torch()
    t = torch.arange(1000, dtype=torch.float32, device="cuda").requires_grad_()
    assert gpureduce.sum(t) == np.float32(499500.0)
    np.testing.assert_array_equal(gpureduce.cumsum(t).cpu().numpy(), np.cumsum(np.arange(1000, dtype=np.float32)))


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float16, np.float32,
                                   np.float64, np.complex64])
def test_cupy_arrays_are_read_from_their_own_attributes(dtype, rng):
    """A CuPy array's intake reads data.ptr, data.device_id, shape, byte strides and dtype (no DLPack exchange):
    views with offsets, negative and non-contiguous strides, and empty arrays, as the DLPack route reads them."""
    cp = _cupy()
    host = (rng.standard_normal((12, 10)) * 10).astype(dtype)
    a = cp.asarray(host)
    for view, want in [(a, host), (a[2:, 3:], host[2:, 3:]), (a[::-1, ::-2], host[::-1, ::-2]), (a.T, host.T),
                       (a[5], host[5]), (a[:0], host[:0]), (a[3, 4], host[3, 4])]:
        x = _core.intake(view)
        assert x.protocol == "cupy"
        assert x.shape == want.shape and x.dtype == want.dtype
        assert x.strides == tuple(s // want.itemsize for s in view.strides)
        assert x.host is False
        if dtype == np.complex64:
            np.testing.assert_allclose(to_numpy(gpureduce.sum(view)), want.astype(np.complex128).sum(), rtol=1e-5,
                                       atol=1e-3)
        elif want.size:
            assert to_numpy(gpureduce.max(view)) == want.max()
            assert to_numpy(gpureduce.argmin(view)) == want.argmin()
        else:
            assert to_numpy(gpureduce.sum(view)) == 0
        if want.ndim and want.size and dtype not in (np.bool_, np.complex64):
            # exact in float64 for these 120 elements, except float64's own (a scan in a tree, not in order)
            got, expect = to_numpy(gpureduce.cumsum(view, dtype=np.float64)), np.cumsum(want, dtype=np.float64)
            if dtype == np.float64:
                np.testing.assert_allclose(got, expect, rtol=0, atol=1e-12 * np.abs(want).sum())
            else:
                np.testing.assert_array_equal(got, expect)
