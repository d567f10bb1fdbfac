"""variant="exact" of dot and vdot on the GPU (gpureduce/_planning/exact_dot.py): float16, bfloat16, float32,
float64, complex64 and complex128 vectors of NumPy, CuPy and PyTorch give the exact dot product rounded once, the
same bits in any order; midpoints of float32 go the way of the rest.  The reference sums the products in fractions
(test_exact_dot_cpu.py's exact_dot_product, whose logic it also checks with the exact sum stood in for on the
host)."""
import numpy as np
import pytest

import gpureduce
from conftest import _torch
from gpureduce._planning.operands import BFLOAT16
from gpureduce.testing import to_numpy
from test_exact_dot_cpu import exact_dot_product, same
from test_exact_gpu import draw

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("kind", ["normal", "full range", "log-uniform", "cancellation"])
@pytest.mark.parametrize("n", [0, 1, 1000, 65_537])
def test_float32_any_order(kind, n):
    rng = np.random.default_rng()
    x, y = draw(kind, np.float32, n, rng), draw(kind, np.float32, n, rng)
    want = exact_dot_product(x, y, np.dtype(np.float32))
    order = rng.permutation(n)
    for got in (gpureduce.dot(x, y, variant="exact"), gpureduce.dot(cupy.asarray(x), cupy.asarray(y), variant="exact"),
                gpureduce.dot(x[order], y[order], variant="exact")):
        assert same(to_numpy(got), want), (kind, n, got, want)


@pytest.mark.parametrize("side", [1, -1, 0])
def test_a_float32_midpoint_goes_the_way_of_the_rest(side):
    x = cupy.asarray(np.array([1.0, 2.0**-24, 2.0**-40], np.float32))
    y = cupy.asarray(np.array([1.0, 1.0, side * 2.0**-40], np.float32))
    got = gpureduce.dot(x, y, variant="exact")
    assert isinstance(got, cupy.ndarray) and got.shape == ()
    assert same(got.get(), {1: np.float32(1 + 2.0**-23), -1: np.float32(1.0), 0: np.float32(1.0)}[side])


def test_halves_complex_vdot_and_torch():
    torch = _torch()
    rng = np.random.default_rng()
    h = rng.standard_normal(5000).astype(np.float16)
    assert same(to_numpy(gpureduce.dot(cupy.asarray(h), cupy.asarray(h[::-1].copy()), variant="exact")),
                exact_dot_product(h, h[::-1], np.dtype(np.float16)))
    c = (rng.standard_normal(3000) + 1j * rng.standard_normal(3000)).astype(np.complex64)
    d = (rng.standard_normal(3000) * 1e3 + 1j * rng.standard_normal(3000)).astype(np.complex64)
    assert same(to_numpy(gpureduce.vdot(cupy.asarray(c), cupy.asarray(d), variant="exact")),
                exact_dot_product(c, d, np.dtype(np.complex64), conj=True))
    t = torch.from_numpy(draw("log-uniform", np.float32, 4097, rng)).cuda()
    got = gpureduce.dot(t, t.flip(0), variant="exact")
    assert isinstance(got, torch.Tensor) and got.shape == ()
    want = exact_dot_product(t.cpu().numpy(), t.flip(0).cpu().numpy(), np.dtype(np.float32))
    assert same(got.cpu().numpy(), want)
    b = torch.from_numpy(rng.standard_normal(999).astype(np.float32)).cuda().to(torch.bfloat16)
    got = gpureduce.dot(b, b, variant="exact")
    assert got.dtype == torch.bfloat16 and got.device == b.device
    want = exact_dot_product(b.float().cpu().numpy(), b.float().cpu().numpy(), BFLOAT16)
    assert same(got.float().cpu().numpy().astype(BFLOAT16), want)
    w = rng.standard_normal(20_001) * 10.0 ** rng.uniform(-30, 30, 20_001)
    assert same(to_numpy(gpureduce.dot(cupy.asarray(w), cupy.asarray(w[::-1].copy()), variant="exact")),
                exact_dot_product(w, w[::-1], np.dtype(np.float64)))
    z = w[:10_000] + 1j * w[10_000:20_000]
    assert same(to_numpy(gpureduce.vdot(cupy.asarray(z), cupy.asarray(z[::-1].copy()), variant="exact")),
                exact_dot_product(z, z[::-1], np.dtype(np.complex128), conj=True))
    with pytest.raises(TypeError, match="one library"):
        gpureduce.dot(cupy.ones(3, cupy.float32), torch.ones(3, device="cuda"), variant="exact")
    out = cupy.zeros((), cupy.float32)
    assert gpureduce.dot(cupy.ones(7, cupy.float32), cupy.ones(7, cupy.float32), out=out, variant="exact") is out
    assert float(out) == 7.0
