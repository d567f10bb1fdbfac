"""bfloat16 on the GPU (issue 15): NumPy arrays of ml_dtypes.bfloat16, PyTorch and JAX tensors through DLPack,
for every operator, along any axes; accumulated in float32 as float16 is, the result dtype PyTorch gives.

NumPy's own bfloat16 loops (ml_dtypes') round every step, so the reference is NumPy's answer on the input in
float32, rounded to bfloat16 (gpureduce.testing.assert_matches_numpy does that for bfloat16 inputs)."""
import ml_dtypes
import numpy as np
import pytest

import gpureduce
from conftest import DLPackOnly
from gpureduce.testing import REDUCTIONS, SCANS, assert_matches_numpy, to_numpy

pytestmark = pytest.mark.gpu

BF16 = np.dtype(ml_dtypes.bfloat16)
AXIS_REDUCE = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]
AXIS_SCAN = [v.name for v in gpureduce.variants(kind="scan") if "axes" in v.properties]
# shapes around warp, block and tile boundaries, with the axes reduced or scanned along
CASES = [((0,), None), ((1,), None), ((31,), 0), ((1000,), None), ((4097,), -1), ((33, 257), 0), ((33, 257), 1),
         ((5, 1025), None), ((3, 7, 129), (0, 2)), ((2, 0, 3), 1)]


def bf16_data(rng, op, shape, nan_share):
    """Values that keep every operator finite: products near 1, logs of positive numbers, some NaN.  The factors'
    logs are centred on 0 (uniform(0.75, 1.3) drifted by +0.012 a factor: a 5,125-element running product passed
    float32's largest value at ~2 sigma, where NumPy's serial chain stays inf and a blocked scan comes back)."""
    n = int(np.prod(shape))
    if op in ("prod", "nanprod", "cumprod", "nancumprod"):
        x = np.exp(rng.uniform(-0.25, 0.25, n))  # a running log's spread over 5,125 factors: ~10, never 88
    else:
        x = rng.standard_normal(n) * 4
    x[rng.random(n) < nan_share] = np.nan
    return x.astype(BF16).reshape(shape)


def _axis_for(op, axis):
    if op in SCANS or op in ("argmin", "argmax", "nanargmin", "nanargmax"):
        return None if axis is None or isinstance(axis, tuple) else axis
    return axis


@pytest.mark.parametrize("variant", AXIS_REDUCE)
@pytest.mark.parametrize("nan_share", [0.0, 0.05])
@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("op", REDUCTIONS)
def test_reductions_match_numpy_in_float32(rng, op, shape, axis, nan_share, variant):
    x = bf16_data(rng, op, shape, nan_share)
    assert_matches_numpy(op, x, axis=_axis_for(op, axis), variant=variant)


@pytest.mark.parametrize("variant", AXIS_SCAN)
@pytest.mark.parametrize("nan_share", [0.0, 0.05])
@pytest.mark.parametrize("shape,axis", CASES)
@pytest.mark.parametrize("op", sorted(SCANS))
def test_scans_match_numpy_in_float32(rng, op, shape, axis, nan_share, variant):
    x = bf16_data(rng, op, shape, nan_share)
    assert_matches_numpy(op, x, axis=_axis_for(op, axis), variant=variant)


@pytest.mark.parametrize("exclusive", [False, True])
def test_exclusive_scans_and_keepdims(rng, exclusive):
    x = bf16_data(rng, "cumsum", (40, 70), 0.0)
    assert_matches_numpy("cumsum", x, axis=1, exclusive=exclusive)
    assert_matches_numpy("sum", x, axis=0, keepdims=True)
    assert_matches_numpy("max", x, axis=1, keepdims=True, initial=-1.0, where=x > 0)


def test_accumulated_in_float32_not_in_bfloat16():
    # 2^20 ones: a bfloat16 accumulator stalls at 256 (256 + 1 rounds back to 256); float32 counts them all
    n = 1 << 20
    ones = np.ones(n, BF16)
    total = gpureduce.sum(ones)
    assert isinstance(total, ml_dtypes.bfloat16) and float(total) == n
    assert float(gpureduce.mean(ones)) == 1.0
    assert float(gpureduce.var(ones)) == 0.0
    scan = gpureduce.cumsum(ones)
    assert scan.dtype == BF16
    # each prefix exact in float32, then rounded once to bfloat16
    want = np.arange(1, n + 1, dtype=np.float32).astype(BF16)
    np.testing.assert_array_equal(scan.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtype_widens(rng, dtype):
    x = bf16_data(rng, "sum", (300, 41), 0.0)
    for op in ("sum", "mean", "cumsum", "var"):
        got = getattr(gpureduce, op)(x, axis=0, dtype=dtype)
        assert got.dtype == dtype, op
        assert_matches_numpy(op, x, axis=0, dtype=dtype)


def test_nan_functions_skip_nan_where_numpy_would_not_know_it_is_a_float(rng):
    x = bf16_data(rng, "sum", (64, 9), 0.2)
    want = np.nanmax(x.astype(np.float32), axis=0)
    np.testing.assert_array_equal(gpureduce.nanmax(x, axis=0).astype(np.float32), want)
    assert not np.isnan(gpureduce.nansum(x).astype(np.float32))
    with pytest.warns(RuntimeWarning):
        assert np.isnan(gpureduce.nanmean(np.full(5, np.nan, BF16)).astype(np.float32))
    with pytest.raises(ValueError):
        gpureduce.nanargmin(np.full(5, np.nan, BF16))


def test_dot_vdot_and_logsumexp_weights(rng):
    a = bf16_data(rng, "sum", (5000,), 0.0)
    b = bf16_data(rng, "sum", (5000,), 0.0)
    ref = float(np.dot(a.astype(np.float64), b.astype(np.float64)))
    for f in (gpureduce.dot, gpureduce.vdot):
        got = f(a, b)
        assert isinstance(got, ml_dtypes.bfloat16)
        assert abs(float(got) - ref) <= 2 ** -7 * abs(ref) + 1e-3 * float(np.abs(a.astype(np.float64)) @ np.abs(
            b.astype(np.float64)))
    w = rng.uniform(0.5, 2.0, 5000).astype(BF16)
    got = gpureduce.logsumexp(a, b=w)
    want = np.log(np.sum(w.astype(np.float64) * np.exp(a.astype(np.float64))))
    assert got.dtype == BF16 and abs(float(got) - want) <= 2 ** -7 * abs(want) + 1e-3


# ---------------------------------------------------------------- PyTorch and JAX tensors through DLPack

def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def _torch_functions(torch):
    """gpureduce operator -> the PyTorch function computing it along dim 0."""
    return {
        "sum": lambda t: torch.sum(t, 0), "prod": lambda t: torch.prod(t, 0), "mean": lambda t: torch.mean(t, 0),
        "min": lambda t: torch.amin(t, 0), "max": lambda t: torch.amax(t, 0),
        "argmin": lambda t: torch.argmin(t, 0), "argmax": lambda t: torch.argmax(t, 0),
        "any": lambda t: torch.any(t, 0), "all": lambda t: torch.all(t, 0),
        "count_nonzero": lambda t: torch.count_nonzero(t, 0), "nansum": lambda t: torch.nansum(t, 0),
        "nanmean": lambda t: torch.nanmean(t, 0), "var": lambda t: torch.var(t, 0, correction=0),
        "std": lambda t: torch.std(t, 0, correction=0), "logsumexp": lambda t: torch.logsumexp(t, 0),
        "vector_norm": lambda t: torch.linalg.vector_norm(t, dim=0), "cumsum": lambda t: torch.cumsum(t, 0),
        "cumprod": lambda t: torch.cumprod(t, 0), "cummax": lambda t: torch.cummax(t, 0).values,
        "cummin": lambda t: torch.cummin(t, 0).values, "logcumsumexp": lambda t: torch.logcumsumexp(t, 0),
    }


@pytest.mark.parametrize("op", list(_torch_functions(None)))
def test_torch_tensors_give_torch_results_of_torch_dtypes(rng, op):
    torch = _torch()
    host = rng.uniform(0.6, 1.4, (48, 33)).astype(np.float32)
    t = torch.from_numpy(host).to(device="cuda", dtype=torch.bfloat16)
    want = _torch_functions(torch)[op](t)
    got = getattr(gpureduce, op)(t, axis=0)
    assert isinstance(got, torch.Tensor) and got.is_cuda, type(got)
    assert got.dtype == want.dtype, f"{op}: {got.dtype}, PyTorch gives {want.dtype}"
    assert got.shape == want.shape
    if want.dtype in (torch.bool, torch.int64) or op in ("min", "max", "cummax", "cummin"):
        assert torch.equal(got, want), op
        return
    if op in ("cumsum", "cumprod", "logcumsumexp"):  # PyTorch's bfloat16 scans round every step: float64's
        want = _torch_functions(torch)[op](t.double())
    torch.testing.assert_close(got.double(), want.double(), rtol=2 ** -6, atol=1e-3)


def test_torch_whole_reductions_dot_and_strided_views(rng):
    torch = _torch()
    t = torch.randn(3000, 8, device="cuda").to(torch.bfloat16)
    total = gpureduce.sum(t)  # 0-d: a 0-d bfloat16 tensor, as torch.sum's (issue 38)
    assert isinstance(total, torch.Tensor) and total.shape == () and total.dtype == torch.bfloat16
    assert abs(float(total) - t.double().sum().item()) <= 0.01 * t.double().abs().sum().item()
    col = t[:, 3]  # a strided view, read in place
    got = gpureduce.cumsum(col)
    torch.testing.assert_close(got.float(), torch.cumsum(col.float(), 0).bfloat16().float(), rtol=2 ** -7, atol=0.05)
    v = t[:, 0].contiguous()
    d = gpureduce.dot(v, v)
    assert abs(float(d) - torch.dot(v.double(), v.double()).item()) <= 0.01 * torch.dot(v.double(), v.double()).item()


def test_jax_arrays_give_jax_results(rng):
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX without a GPU")
    host = rng.standard_normal((100, 7)).astype(BF16)
    x = jax.device_put(jnp.asarray(host, dtype=jnp.bfloat16), gpu)
    for op in ("sum", "max", "mean", "cumsum", "logsumexp"):
        got = getattr(gpureduce, op)(x, axis=0)
        assert isinstance(got, jax.Array), (op, type(got))
        assert got.dtype == jnp.bfloat16, (op, got.dtype)
        want = getattr(gpureduce, op)(host, axis=0)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint16), want.view(np.uint16), err_msg=op)


def test_device_array_result_goes_through_dlpack_not_the_array_interface(rng):
    torch = _torch()
    t = torch.randn(1000, device="cuda").to(torch.bfloat16)
    r = gpureduce.cumsum(DLPackOnly(t))  # an exporter gpureduce knows nothing else of: the result stays a DeviceArray
    assert isinstance(r, gpureduce.DeviceArray) and r.dtype == BF16
    assert not hasattr(r, "__cuda_array_interface__")  # it has no bfloat16 type string
    back = torch.from_dlpack(r)
    assert back.dtype == torch.bfloat16
    torch.testing.assert_close(back.float(), torch.cumsum(t.float(), 0).bfloat16().float(), rtol=2 ** -7, atol=0.1)
    host = r.get()
    assert host.dtype == BF16 and np.array_equal(host.view(np.uint16), back.cpu().view(torch.int16).numpy().view(
        np.uint16))


@pytest.mark.parametrize("op", ["sum", "mean", "argmax", "var", "cumsum", "nanmax"])
def test_assert_matches_numpy_takes_torch_bfloat16_tensors(rng, op):
    torch = _torch()
    host = bf16_data(rng, op, (200, 9), 0.02)
    t = torch.from_numpy(host.view(np.int16)).view(torch.bfloat16).cuda()
    np.testing.assert_array_equal(to_numpy(t).view(np.uint16), host.view(np.uint16))
    result = assert_matches_numpy(op, t, axis=0)
    assert isinstance(result, torch.Tensor) and result.dtype == (torch.int64 if op == "argmax" else torch.bfloat16)
