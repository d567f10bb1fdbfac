"""Shared test setup: gpureduce's pytest plugin (the `gpu` marker), fixtures, device-array factories."""
import collections
import os

# JAX takes 75% of the GPU's memory at its first array unless told not to; the suite shares the GPU between
# CuPy, PyTorch, JAX and gpureduce (the 2^31-element tests need 26 GiB of it).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpureduce  # noqa: E402
import gpureduce.pytest_plugin  # noqa: E402

HAVE_GPU = gpureduce.device_count() > 0
pytest_plugins = ["pytester"]  # tests/test_testing_cpu.py runs pytest sessions of its own


def pytest_configure(config):
    # An installed gpureduce brings the plugin through its pytest11 entry point; a tree built in place does not.
    gpureduce.pytest_plugin.register(config)


# Property-based examples that passed their checks in this session, per test: a hypothesis test calls
# count_example() as its last statement, so an example counts only when every assertion in it ran and held (one
# that raised, was rejected by hypothesis, or returned early without checking is not counted).  The GPU check
# quotes the total line (.ci/device_check.sh greps "hypothesis examples run: N").  Hypothesis' own
# statistics per test (examples passing, failing and invalid, run times) are printed by
# `pytest --hypothesis-show-statistics`.
_EXAMPLES = collections.Counter()


def count_example(test=None):
    """Count one example of the running hypothesis test as checked and passed; call it after the checks."""
    if test is None:  # "tests/test_x.py::test_y[param] (call)" -> "test_y[param]"
        test = os.environ.get("PYTEST_CURRENT_TEST", "unknown test").rsplit(" (", 1)[0].rpartition("::")[2]
    _EXAMPLES[test] += 1


def examples_counted():
    """{test name: examples checked and passed so far}."""
    return dict(sorted(_EXAMPLES.items()))


def pytest_terminal_summary(terminalreporter):
    if _EXAMPLES:
        terminalreporter.write_line(f"hypothesis examples run: {sum(_EXAMPLES.values())}")
        terminalreporter.write_line(f"hypothesis examples per test: {examples_counted()}")
        if not terminalreporter.config.getoption("hypothesis_show_statistics", False):
            terminalreporter.write_line(
                "(pytest --hypothesis-show-statistics adds hypothesis' own statistics per test)")


def reduction_data(rng, dtype, shape, op):
    """Random input for `op` of NumPy's reduction family: bool 30% true, integers in [0, 100) ([0, 3) for
    prod), floats ~ N(0, 16) (in [0.9, 1.1] for prod, 5% NaN for the nan-functions), complex with a random
    imaginary part (small for prod, so that long products stay finite)."""
    dtype = np.dtype(dtype)
    if dtype == bool:
        return rng.random(shape) < 0.3
    if dtype.kind in "iu":  # (bfloat16's kind is 'V')
        top = 3 if op == "prod" else 100
        return rng.integers(0, top, shape).astype(dtype)
    x = rng.uniform(0.9, 1.1, shape) if op == "prod" else rng.standard_normal(shape) * 4
    if dtype.kind == "c":
        x = x + 1j * (rng.uniform(-0.1, 0.1, shape) if op == "prod" else rng.standard_normal(shape))
    if op.startswith("nan") and dtype.kind != "c":
        x[rng.random(shape) < 0.05] = np.nan
    return x.astype(dtype)


@pytest.fixture
def rng():
    """Fresh random data in every test run (the seed is printed on failure)."""
    seed = np.random.SeedSequence().entropy % (2**32)
    print(f"random seed {seed}")
    return np.random.default_rng(seed)


def _cupy():
    return pytest.importorskip("cupy")


def draw_shape(draw, smallest=0):
    """A hypothesis case's shape: 0 to 3 sides, each `smallest`..5 or one around a warp or block boundary (31, 33,
    257, 1025), the small sides only where the whole would pass 20000 elements."""
    from hypothesis import strategies as st

    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.lists(st.one_of(st.integers(smallest, 5), st.sampled_from([31, 33, 257, 1025])),
                                min_size=ndim, max_size=ndim)))
    return tuple(min(s, 5) for s in shape) if int(np.prod(shape)) > 20000 else shape


def placement(draw, variants):
    """A hypothesis case's home ("numpy" or "cupy"), variant (one of `variants`) and data seed."""
    from hypothesis import strategies as st

    return dict(home=draw(st.sampled_from(["numpy", "cupy"])), variant=draw(st.sampled_from(variants)),
                seed=draw(st.integers(0, 2**32 - 1)))


def at_home(home, x, kwargs):
    """`x` where a test case puts it: as it is ("numpy"), or a CuPy copy ("cupy") with its where= mask in
    `kwargs` moved to the device too."""
    if home != "cupy":
        return x
    cp = _cupy()
    if "where" in kwargs:
        kwargs["where"] = cp.asarray(kwargs["where"])
    return cp.asarray(x)


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def _numba_cuda():
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("numba without CUDA")
    return numba_cuda


class CountingProducer:
    """A DLPack producer of a host array that counts its handshakes."""

    def __init__(self, array):
        self.array, self.calls = array, 0

    def __dlpack__(self, **kwargs):
        self.calls += 1
        return self.array.__dlpack__(**{k: v for k, v in kwargs.items() if k != "stream"})

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class DLPackOnly:
    """An array (NumPy's, PyTorch's, ...) exporting only DLPack: no __array__, no buffer protocol, no
    __cuda_array_interface__, and no library gpureduce knows (a device result stays a gpureduce.DeviceArray)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


# name -> function(host ndarray) -> an array of that library on the device, holding the same values
DEVICE_LIBRARIES = {
    "cupy": lambda a: _cupy().asarray(a),
    "torch": lambda a: _torch().from_numpy(np.ascontiguousarray(a)).cuda(),
    "numba": lambda a: _numba_cuda().to_device(np.ascontiguousarray(a)),
}


# ---------------------------------------------------------------- data whose answers are known exactly

def exact_float_data(family, dtype, n, rng):
    """Floating `dtype` data of length `n` whose every partial sum (family "sum") or product ("prod") is exactly
    representable in `dtype`, in any order and grouping: any correct algorithm returns NumPy's float64 result cast
    to `dtype`, bit for bit, so the tests compare with ==, and one lost or duplicated element shows.

    sum: integers in [1, m], about a sixteenth of them negated, where m = 8 or less, so that the positive and the
    negative elements each add up to at most 2**(mantissa bits + 1) (2**24 for float32, 2**53 for float64): every
    subset's sum is an integer of that range, exact in `dtype`.  No element is 0 and most are positive, so a lost
    element, tile or block (or a duplicated one) changes the sum.  Past 2**24 float32 elements m is 1 (+-1).
    prod: +-1 factors with random signs and at most 64 factors 2 or 0.5, the first and the last element among
    them: every partial product is +-2**e with |e| <= 64, exact.  The 0.5s are placed so that every prefix product
    has |p| >= 2: a scan that leaves out a carry, and a product that drops its last factor, are off by a power of 2.
    """
    dt = np.dtype(dtype)
    if n == 0:
        return np.zeros(0, dt)
    if family == "sum":
        limit = 2 ** (np.finfo(dt).nmant + 1)  # every integer up to this magnitude is a float of dt
        m = int(min(8, max(1, limit // n)))
        x = rng.integers(1, m, n, endpoint=True).astype(np.float64)
        x[rng.random(n) < 1 / 16] *= -1
        positive, negative = x[x > 0].sum(), -x[x < 0].sum()
        assert positive <= limit and negative <= limit, (positive, negative, limit)  # the claim above, checked
        return x.astype(dt)
    x = rng.choice([-1.0, 1.0], n)
    where = np.unique(np.concatenate([[0, n - 1], rng.choice(n, min(n, 62), replace=False)]))
    exponent, steps = 0, np.empty(where.size)
    for i in range(where.size):  # the prefix exponent walks in [1, 64]: +1 wherever it is 1 (or 0, at the start)
        steps[i] = 1 if exponent <= 1 else rng.choice([-1, 1])
        exponent += steps[i]
    x[where] *= np.exp2(steps)
    return x.astype(dt)


def one_size_cached(cache, key, make):
    """cache[key], made by make(host, seed) from fresh exact_float_data (key = (family, dtype, n)) and kept
    while the tests run at that size: one size of device inputs in memory at a time, new data every session."""
    if key not in cache:
        family, dtype, n = key
        if any(k[2] != n for k in cache):
            cache.clear()
        seed = int(np.random.SeedSequence().entropy % 2**32)
        print(f"random seed of the exact {family} {dtype} n={n} input: {seed}")  # shown when the case fails
        cache[key] = make(exact_float_data(family, dtype, n, np.random.default_rng(seed)), seed)
    return cache[key]


# The kernels' warp, block and tile sizes (warps of 32; blocks of 256 and 512 elements, 512- and 1024-element
# block-local scan tiles, 2048- and 4096-element coarsened tiles, auto's 4096-float / 16384-int8 block steps) and a
# few powers of two beyond.
EDGES = (32, 256, 512, 1024, 2048, 4096, 8192, 16384, 65536)


def edge_positions(n):
    """Indices 0 <= i < n at which to place a unique extreme: the first two, the last two, the middle, and either
    side of the first and of the last two multiples of every EDGES size below n (k*b - 1 and k*b): the head, the
    last tiles and the carries into them."""
    positions = {0, 1, n // 2, n - 2, n - 1}
    for b in EDGES:
        last = (n - 1) // b
        for k in {1, last - 1, last}:
            positions.update((k * b - 1, k * b))
    return sorted(p for p in positions if 0 <= p < n)


def unique_extremes(dtype):
    """(lowest, highest): values of `dtype` that walk_data never produces, for a unique minimum and maximum."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return dt.type(-(2.0**100)), dt.type(2.0**100)
    info = np.iinfo(dt)
    return dt.type(info.min), dt.type(info.max)


def walk_data(dtype, n, rng):
    """A random walk of +-1 steps (np.cumsum), so that the running maximum and minimum keep changing along the
    whole array, strictly between unique_extremes(dtype) and never iinfo.max - 1 (a poison value): folded into
    [-125, 125] for int8, centred on 2**63 for uint64 (values on both sides of the sign bit)."""
    dt = np.dtype(dtype)
    w = np.cumsum(rng.choice(np.array([-1, 1], np.int64), n))
    if dt.kind == "f":
        return w.astype(dt)
    info = np.iinfo(dt)
    half = (int(info.max) - int(info.min)) // 2 - 2  # the walk's values stay within +-half of the centre
    if half < 2**40:  # fold (a triangle wave of period 4 * half): a reflecting walk
        v = np.mod(w + half, 4 * half)
        w = np.where(v > 2 * half, 4 * half - v, v) - half
    if dt.kind == "u":
        return w.astype(np.uint64).astype(dt) + dt.type(2 ** (8 * dt.itemsize - 1))  # wraps around the centre
    return w.astype(dt)


def extreme_poison(dtype):
    """An out= fill no running extreme of walk_data takes: NaN, or iinfo.max - 1 (neither an extreme nor an
    identity)."""
    dt = np.dtype(dtype)
    return dt.type(np.nan) if dt.kind == "f" else dt.type(int(np.iinfo(dt).max) - 1)


# ---------------------------------------------------------------- masked arrays (gpureduce/_planning/subclasses.py)

# The masks the masked-array tests give an input of 2 or more dimensions: some elements, some elements and a
# whole row (a result with no element along axis 1), every element, numpy.ma's nomask, and an all-False mask
# array (not nomask: numpy.ma answers it as a masked array, with masks of False and its masked mean's dtypes)
MASK_KINDS = ("partial", "masked_row", "all_masked", "nomask", "all_false")


def masked_input(data, kind, rng):
    """np.ma.array(data) with the mask `kind` (MASK_KINDS) drawn by `rng`."""
    if kind == "nomask":
        return np.ma.array(data)
    mask = np.zeros(data.shape, bool)
    if kind in ("partial", "masked_row"):
        mask = rng.random(data.shape) < 0.3
    if kind == "masked_row" and data.ndim and data.shape[0]:
        mask[min(1, data.shape[0] - 1)] = True
    if kind == "all_masked":
        mask[...] = True
    return np.ma.array(data, mask=mask)


def assert_same_answer(got, want, rtol=0.0, atol=0.0, case=""):
    """`got` is `want`, NumPy's answer for a masked array (or numpy.ma's): numpy.ma.masked where it is masked, else
    the same type, dtype and shape, a MaskedArray's mask (nomask where it is nomask, the same array of bools
    otherwise) and its data, masked elements included (floating and complex within rtol and atol, NaN where NaN;
    others exactly)."""
    if want is np.ma.masked:
        assert got is np.ma.masked, f"{case}: {got!r}, not numpy.ma.masked"
        return
    assert type(got) is type(want), f"{case}: a {type(got).__name__}, not a {type(want).__name__}"
    assert got.dtype == want.dtype, f"{case}: dtype {got.dtype}, not {want.dtype}"
    assert np.shape(got) == np.shape(want), f"{case}: shape {np.shape(got)}, not {np.shape(want)}"
    if isinstance(want, np.ma.MaskedArray):
        got_nomask, want_nomask = np.ma.getmask(got) is np.ma.nomask, np.ma.getmask(want) is np.ma.nomask
        assert got_nomask == want_nomask, f"{case}: mask {np.ma.getmask(got)!r}, not {np.ma.getmask(want)!r}"
        np.testing.assert_array_equal(np.ma.getmaskarray(got), np.ma.getmaskarray(want), err_msg=f"{case}: mask")
        got, want = got.data, want.data
    got, want = np.asarray(got), np.asarray(want)
    if want.dtype.kind in "fc":
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True, err_msg=case)
    else:
        np.testing.assert_array_equal(got, want, err_msg=case)


def numpy_ma_answer(name, x, **kw):
    """NumPy's answer for the masked array `x`: ``np.<name>(x, **kw)``, which calls MaskedArray.<name>; for ptp,
    ``np.ma.ptp`` (NumPy 2's np.ptp subtracts ufunc reductions, which drop the mask)."""
    return (np.ma.ptp if name == "ptp" else getattr(np, name))(x, **kw)


def masked_tolerance(name, x, rtol=None):
    """(rtol, atol) for comparing gpureduce's `name` of masked array `x` with numpy.ma's: `rtol`, by default 1e-5
    for float32 data, else 1e-12 (floating results of integer data are float64); atol rtol times the result's scale
    (sum(|x|) for the sums, products and means, max(|x|)**2 for var, max(|x|) for std, of the finite elements), so
    that a result near 0 is compared as a sum is."""
    data = np.abs(np.asarray(np.ma.getdata(x), dtype=np.complex128 if np.iscomplexobj(x) else np.float64))
    data = data[np.isfinite(data)]
    if rtol is None:
        rtol = 1e-5 if np.ma.getdata(x).dtype in (np.float32, np.complex64) else 1e-12
    top = float(data.max(initial=0.0))
    scale = top ** 2 if name == "var" else top if name == "std" else float(data.sum())
    return rtol, rtol * (scale + 1.0)
