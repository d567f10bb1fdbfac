"""any, all and count_nonzero on the GPU against NumPy: every dtype, shapes of up to 4 dimensions with zero-size
sides, layouts, axes, keepdims, where= and out=, host and CuPy inputs, the variants that run them (auto and
cub), as hypothesis properties; then the edges a property draws rarely: sizes at the kernels' block and tile
boundaries and at the host pipeline's chunk boundaries, NaN, complex numbers with one nonzero part, bool bytes
other than 0 and 1, empty axes.  Results must equal NumPy's exactly (values, dtype, shape, kind)."""
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gpureduce
from conftest import _cupy, at_home, count_example, placement

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("GR_HYPOTHESIS_EXAMPLES", "200"))
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow])
DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
          "float64", "complex64", "complex128"]
OPS = ["any", "all", "count_nonzero"]
VARIANTS = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]
NUMPY = {"any": np.any, "all": np.all, "count_nonzero": np.count_nonzero}


def sparse_data(rng, dtype, shape, zeros, nans):
    """Values of `dtype` of which about a fraction `zeros` are 0 (and, for floats, `nans` NaN); complex values
    have one part zero as often as not."""
    dtype = np.dtype(dtype)
    n = int(np.prod(shape))
    if dtype == np.bool_:
        return (rng.random(n) >= zeros).reshape(shape)
    keep = rng.random(n) >= zeros
    if dtype.kind == "c":
        re = np.where(rng.random(n) < 0.5, 0.0, rng.standard_normal(n))
        im = np.where(re == 0, rng.uniform(0.5, 2.0, n), np.where(rng.random(n) < 0.5, 0.0, 1.0))
        x = (re + 1j * im) * keep
    elif dtype.kind == "f":
        x = np.where(keep, rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n), 0.0)
        x = np.where(rng.random(n) < nans, np.nan, x)
    else:
        x = np.where(keep, rng.integers(1, 100, n), 0)
    return x.astype(dtype).reshape(shape)


def check_same(got, want, out=None):
    if out is not None:
        assert got is out
    want = np.asarray(want) if not np.isscalar(want) else want
    if np.ndim(want) == 0 and out is None:  # a NumPy scalar, or a device input's 0-d array (issue 38)
        assert isinstance(got, np.generic) or (not isinstance(got, np.ndarray) and tuple(got.shape) == ()), type(got)
    host = got.get() if hasattr(got, "get") else np.asarray(got)
    assert host.dtype == np.asarray(want).dtype, (host.dtype, np.asarray(want).dtype)
    assert host.shape == np.shape(want), (host.shape, np.shape(want))
    np.testing.assert_array_equal(host, want)


@st.composite
def cases(draw):
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 4))
    sides = st.one_of(st.integers(0, 6), st.sampled_from([31, 33, 127, 129, 255, 257, 1025, 4097]))
    shape = tuple(draw(st.lists(sides, min_size=ndim, max_size=ndim)))
    if int(np.prod(shape)) > 20000:
        shape = tuple(min(s, 5) for s in shape)
    axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1) if ndim else st.just(None),
                          st.lists(st.integers(0, ndim - 1), unique=True).map(tuple) if ndim else st.just(None)))
    layout = draw(st.sampled_from(["C", "F", "T", "step", "rev"]))
    return dict(op=op, dtype=dtype, shape=shape, axis=axis, layout=layout,
                keepdims=draw(st.booleans()), zeros=draw(st.sampled_from([0.0, 0.5, 0.97, 1.0])),
                nans=draw(st.sampled_from([0.0, 0.1])), where=op != "count_nonzero" and draw(st.booleans()),
                out=op != "count_nonzero" and draw(st.booleans()), **placement(draw, VARIANTS))


def view(x, layout):
    if layout == "F":
        return np.asfortranarray(x)
    if layout == "T":
        return x.T.copy().T
    if layout == "step" and x.ndim:
        return np.repeat(x, 2, axis=-1)[..., ::2]
    if layout == "rev" and x.ndim:
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    return x


@PROPERTY
@given(cases())
def test_matches_numpy(c):
    rng = np.random.default_rng(c["seed"])
    x = view(sparse_data(rng, c["dtype"], c["shape"], c["zeros"], c["nans"]), c["layout"])
    kwargs = {"axis": c["axis"], "keepdims": c["keepdims"]}
    if c["where"]:
        kwargs["where"] = rng.random(x.shape) < 0.7
    want = NUMPY[c["op"]](x, **kwargs)
    a = at_home(c["home"], x, kwargs)
    out = None
    if c["out"]:
        out_dtype = rng.choice([np.bool_, np.float32, np.int16])
        want = np.asarray(want).astype(out_dtype)
        out = np.full(np.shape(want), 7, out_dtype) if c["home"] == "numpy" else _cupy().full(np.shape(want), 7,
                                                                                              out_dtype)
        kwargs["out"] = out
    got = getattr(gpureduce, c["op"])(a, variant=c["variant"], **kwargs)
    check_same(got, want, out)
    count_example()


# ---------------------------------------------------------------- edges

SIZES = [0, 1, 2, 31, 32, 33, 255, 256, 257, 2047, 2048, 2049, 4095, 4096, 4097, 65535, 65537, 2**20 + 3]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint16", "float16", "float32", "float64", "complex128"])
def test_one_true_or_one_false_anywhere(dtype, n, variant, rng):
    """A single nonzero element among zeros (any, count_nonzero) and a single zero among ones (all), at the
    first, last and a random position, whole arrays and rows."""
    for pos in sorted({0, n - 1, int(rng.integers(0, n)) if n else 0}) if n else [None]:
        lone = np.zeros(n, dtype)
        rest = np.ones(n, dtype)
        if pos is not None:
            lone[pos] = 1
            rest[pos] = 0
        for op, x in (("any", lone), ("count_nonzero", lone), ("all", rest), ("any", rest), ("all", lone)):
            check_same(getattr(gpureduce, op)(x, variant=variant), NUMPY[op](x))
        if n >= 2:
            rows = np.stack([lone, rest, np.zeros(n, dtype)])
            for op in OPS:
                check_same(getattr(gpureduce, op)(rows, axis=1, variant=variant), NUMPY[op](rows, axis=1))
                check_same(getattr(gpureduce, op)(rows.T, axis=0, variant=variant), NUMPY[op](rows.T, axis=0))


@pytest.mark.parametrize("op", OPS)
def test_truth_of_nan_complex_and_odd_bool_bytes(op):
    """NaN is true; a complex number is true when either part is; a bool byte of 2 or 255 is True (NumPy reads
    any nonzero byte as True)."""
    cases = [np.array([0.0, np.nan, 0.0]), np.array([np.nan, np.nan]), np.array([0j, 1j, 0j]),
             np.array([0j, complex(0.0, -0.0)]), np.array([0, 2, 255, 0], np.uint8).view(np.bool_),
             np.array([-0.0, 0.0], np.float32), np.array([0, 0x8000], np.uint16).view(np.float16)]
    for x in cases:
        check_same(getattr(gpureduce, op)(x), NUMPY[op](x))


@pytest.mark.parametrize("op", OPS)
def test_empty_axes_give_the_identities(op):
    x = np.zeros((3, 0, 4), np.float32)
    for axis in (None, 1, (0, 1), 2):
        check_same(getattr(gpureduce, op)(x, axis=axis), NUMPY[op](x, axis=axis))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shape, axis", [((2**23 + 5,), None), ((3, 2**21 + 7), 1), ((2**20 + 3, 7), 0),
                                         ((5, 2**22 + 1), None)])
def test_host_arrays_through_the_pipeline(op, shape, axis, rng):
    """Host arrays large enough to stream chunk by chunk (rows, pieces of a long row, slabs of columns)."""
    x = sparse_data(rng, "float32", shape, 0.999, 0.0)
    check_same(getattr(gpureduce, op)(x, axis=axis), NUMPY[op](x, axis=axis))
    x[...] = 1
    x.reshape(-1)[-1] = 0
    check_same(getattr(gpureduce, op)(x, axis=axis), NUMPY[op](x, axis=axis))
