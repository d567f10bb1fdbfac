"""The segmented and grouped scans against NumPy on the GPU (gpureduce.segmented_scan, gpureduce.groupby_scan;
issue 40).

The reference scans each range alone with NumPy's own accumulation (np.cumsum, np.cumprod, np.minimum.accumulate,
np.maximum.accumulate, np.nancumsum, np.nancumprod, np.logaddexp.accumulate): in float64 for floating inputs,
exactly in the result dtype for integers and bool; positions in no range hold the operator's identity.  Integers,
bool, min and max must match exactly; floating results lie within an error bound that grows with the range's
length, scaled by the running sum of |x| (sums) or by the value itself (products, logsumexp).  Covered: every
operator x dtype x variant x inclusive/exclusive; range lengths across every algorithm's regime (1-16, ~100, ~5000,
2^17 ranges that "block" cuts into parts, 2^20 and 2^22), power-law lengths, empty, reversed, shuffled, negative and
clipped bounds, gaps, CSR offsets, a range at the axis' end; sizes around powers of two; row and column layouts,
strided and reversed views; host and device bounds (CuPy, PyTorch); NumPy, CuPy, PyTorch and JAX inputs; out=
poisoned first; stream=; the same bits on every call.  groupby_scan against a pandas-free reference (each group's
elements scanned in their order and put back), its sorted path bit for bit against the gathered result.
Every case seeds its own generator from its parameters (zlib.crc32): the same data on every run.
"""
import zlib

import numpy as np
import pytest

import gpureduce
from gpureduce._planning.ranges import SCAN_ALGORITHM_DOCS
from gpureduce._registry import SCAN_OPS
from gpureduce.testing import to_numpy

pytestmark = pytest.mark.gpu

cp = pytest.importorskip("cupy")

VARIANTS = list(SCAN_ALGORITHM_DOCS)  # auto, thread, warp, block
ACCUMULATE = {
    "sum": np.cumsum, "prod": np.cumprod, "min": np.minimum.accumulate, "max": np.maximum.accumulate,
    "nansum": np.nancumsum, "nanprod": np.nancumprod, "logsumexp": np.logaddexp.accumulate,
}


def seeded(*key):
    """A generator of the case's own: the same data on every run, whatever ran before (crc32, not the salted
    hash())."""
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


# ---------------------------------------------------------------- array kinds

def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def jax_gpu():
    jax = pytest.importorskip("jax")
    try:
        return jax, jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU here")


def on(kind, x):
    """Host array `x` as `kind`: "numpy" (itself), "list", "cupy", "torch" or "jax" (on the GPU)."""
    x = np.asarray(x)
    if kind == "numpy":
        return x
    if kind == "list":
        return x.tolist()
    if kind == "cupy":
        return cp.asarray(x)
    if kind == "torch":
        return torch_cuda().from_numpy(np.ascontiguousarray(x)).cuda()
    if kind == "jax":
        jax, device = jax_gpu()
        return jax.device_put(x, device)
    raise ValueError(kind)


def kind_of(x):
    """The library of an array: its type's top-level module (jaxlib's arrays count as JAX's)."""
    module = type(x).__module__.partition(".")[0]
    return "jax" if module == "jaxlib" else module


# ---------------------------------------------------------------- the reference

def result_dtype(op, dtype):
    """NumPy's scan dtype: numpy.cumsum's widening of bool and narrow integers for sums and products, the input's
    for min and max, float64 for logsumexp of bool and integers (SciPy's rule)."""
    dt = np.dtype(dtype)
    if op in ("min", "max"):
        return dt
    if op == "logsumexp":
        return dt if dt.kind == "f" else np.dtype(np.float64)
    return np.cumsum(np.zeros(1, dt)).dtype


def identity(op, dtype):
    """The value of a position in no range (and of an exclusive scan's first position) in `dtype`."""
    dt = np.dtype(dtype)
    if op in ("sum", "nansum"):
        return dt.type(0)
    if op in ("prod", "nanprod"):
        return dt.type(1)
    if op == "logsumexp":
        return dt.type(-np.inf)
    if dt == np.bool_:
        return np.bool_(op == "min")
    if dt.kind == "f":
        return dt.type(np.inf if op == "min" else -np.inf)
    info = np.iinfo(dt)
    return dt.type(info.max if op == "min" else info.min)


def normalized(starts, stops, n):
    """(first, length) of each range by NumPy's slice rules: a negative bound counts from the end, both are clipped
    to [0, n], stop <= start is empty."""
    s = np.asarray(starts, dtype=np.int64).reshape(-1)
    e = np.asarray(stops, dtype=np.int64).reshape(-1)
    s = np.clip(np.where(s < 0, s + n, s), 0, n)
    e = np.clip(np.where(e < 0, e + n, e), 0, n)
    return s, np.maximum(e - s, 0)


def shifted(op, run, work):
    """An inclusive scan along axis 1 made exclusive: the identity first, then all but the last."""
    head = np.full_like(run[:, :1], identity(op, work))
    return np.concatenate([head, run[:, :-1]], axis=1)


def reference(op, a, starts, stops, axis=0, exclusive=False):
    """NumPy's answer: each range's positions scanned alone (ranges of one length in one call), the identity
    elsewhere; float64 for a floating result, the result dtype itself (exact, wrapping as NumPy's) otherwise."""
    rt = result_dtype(op, a.dtype)
    work = np.dtype(np.float64) if rt.kind == "f" else rt
    x = np.moveaxis(np.asarray(a), axis, 0).astype(work)
    out = np.full(x.shape, identity(op, work), dtype=work)
    first, length = normalized(starts, stops, x.shape[0])
    for L in np.unique(length[length > 0]):
        at = first[length == L][:, None] + np.arange(L)  # (ranges of this length, L)
        with np.errstate(invalid="ignore"):  # NaN data
            run = ACCUMULATE[op](x[at], axis=1)
        out[at] = shifted(op, run, work) if exclusive else run
    return np.moveaxis(out, 0, axis)


def length_at(first, length, n):
    """Each position's range length (0 for a position in no range)."""
    lengths = np.zeros(n, np.int64)
    f, l = first[length > 0], length[length > 0]
    total = int(l.sum())
    if total:
        lengths[np.repeat(f, l) + np.arange(total) - np.repeat(np.cumsum(l) - l, l)] = np.repeat(l, l)
    return lengths


def along(v, axis, ndim):
    """1-d `v` shaped to broadcast along `axis` of an ndim-d array."""
    shape = [1] * ndim
    shape[axis] = v.size
    return v.reshape(shape)


def assert_close(op, got, want, lengths, scale, case):
    """A floating result against its float64 reference: NaN where NumPy has NaN, elsewhere within a bound growing
    with the length L of the position's range: 8 eps log2(L + 2) times the running sum of |x| for sums (a tree's
    rounding chain; the serial ones of "thread" stay far below it on zero-mean data), 16 eps sqrt(L + 2) times the
    value for products and 32 eps sqrt(L + 2) (|value| + 1) for logsumexp (their roundings add like a random walk
    along the serial chains)."""
    rt = got.dtype
    eps = np.finfo(rt).eps
    g = got.astype(np.float64)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(g), nan, err_msg=f"{case}: NaN where NumPy has none, or none where it has")
    if op in ("sum", "nansum"):
        bound = 8 * eps * np.log2(lengths + 2) * scale
    elif op in ("prod", "nanprod"):
        bound = 16 * eps * np.sqrt(lengths + 2) * np.abs(want)
    else:
        bound = 32 * eps * np.sqrt(lengths + 2) * (np.abs(want) + 1)
    with np.errstate(invalid="ignore"):  # inf - inf where both are the identity
        err = np.abs(g - want)
    ok = nan | (g == want) | (err <= bound + np.finfo(rt).tiny)
    assert ok.all(), (f"{case}: {np.count_nonzero(~ok)} positions off, worst error {err[~ok].max()} (bound "
                      f"{bound[~ok][np.argmax(err[~ok])]}) at {np.argwhere(~ok)[:3].tolist()}")


def check(op, got, a, starts, stops, axis=0, exclusive=False, case=""):
    """`got`, the segmented scan of host array `a`, against the reference: its shape and dtype, the identity at
    every position in no range (and at each range's start when exclusive) exactly, then the values."""
    case = f"{op} {a.dtype} axis={axis} exclusive={exclusive} {case}"
    got = to_numpy(got)
    rt = result_dtype(op, a.dtype)
    assert got.shape == a.shape, f"{case}: shape {got.shape} != {a.shape}"
    assert got.dtype == rt, f"{case}: dtype {got.dtype} != {rt}"
    n = a.shape[axis]
    first, length = normalized(starts, stops, n)
    lengths = length_at(first, length, n)
    moved = np.moveaxis(got, axis, 0)
    ident = identity(op, rt)
    assert (moved[lengths == 0] == ident).all(), f"{case}: a position in no range does not hold {ident}"
    if exclusive:
        assert (moved[first[length > 0]] == ident).all(), f"{case}: a range's first position is not {ident}"
    want = reference(op, a, starts, stops, axis, exclusive)
    if rt.kind in "biu" or op in ("min", "max"):
        np.testing.assert_array_equal(got, want.astype(rt), err_msg=case)
        return
    scale = reference("nansum", np.abs(a.astype(np.float64)), starts, stops, axis, exclusive)
    assert_close(op, got, want, along(lengths, axis, a.ndim), scale, case)


# ---------------------------------------------------------------- data and ranges

def data(rng, op, dtype, shape, spread=0.1):
    """Random input for `op`: bool 30% true; integers in [-100, 100) for sums ([-1000, 1000) for min and max, [-5,
    5) for logsumexp), mostly +-1 for products (a few 2s, 3s and 0s: int64 products wrap as NumPy's, exactly); floats
    ~ N(0, 4) (N(0, 2) for logsumexp), products in [1 - spread, 1 + spread] (no overflow or underflow)."""
    dt = np.dtype(dtype)
    if dt == np.bool_:
        return rng.random(shape) < 0.3
    if dt.kind in "iu":
        if op in ("prod", "nanprod"):
            return rng.choice(np.array([-1, 1, 2, 3, 0]), shape, p=[0.4, 0.55, 0.04, 0.009, 0.001]).astype(dt)
        top = {"min": 1000, "max": 1000, "logsumexp": 5}.get(op, 100)
        return rng.integers(-top, top, shape).astype(dt)
    if op in ("prod", "nanprod"):
        x = rng.uniform(1 - spread, 1 + spread, shape)
    elif op == "logsumexp":
        x = rng.standard_normal(shape) * 2
    else:
        x = rng.standard_normal(shape) * 4
    return x.astype(dt)


def lay_out(rng, lengths, gap=0.3, tail=0):
    """Ranges of `lengths` one after another, a gap of 1 to 20 positions (in no range) before about `gap` of them,
    about half the empty ones reversed (stop < start), in shuffled order: (starts, stops, n), n the end of the last
    range plus `tail` positions in no range."""
    lengths = np.asarray(lengths, np.int64)
    k = lengths.size
    gaps = np.where(rng.random(k) < gap, rng.integers(1, 21, k), 0)
    starts = np.cumsum(gaps) + np.cumsum(lengths) - lengths
    stops = starts + lengths
    n = (int(stops[-1]) if k else 0) + tail
    reverse = (lengths == 0) & (starts >= 5) & (rng.random(k) < 0.5)
    stops = np.where(reverse, starts - rng.integers(1, 5, k), stops)  # still positive: no bound from the end
    order = rng.permutation(k)
    return starts[order], stops[order], n


def ranges_over(rng, n, count):
    """`count` disjoint ranges of an axis of n at random (gaps between them, touching or empty ones by chance), in
    shuffled order."""
    cuts = np.sort(rng.integers(0, n + 1, 2 * count))
    order = rng.permutation(count)
    return cuts[0::2][order], cuts[1::2][order]


def csr_over(rng, n, count):
    """CSR offsets of `count` ranges covering an axis of n, in order, a few of them empty: (starts, stops)."""
    cuts = np.sort(rng.integers(0, n + 1, max(count - 1, 0)))
    cuts = np.sort(np.concatenate([cuts, cuts[: count // 50]]))  # repeated offsets: empty ranges
    offsets = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    return offsets[:-1], offsets[1:]


def written_from_the_end(rng, starts, stops, n):
    """The same ranges, about half their bounds counted from the end (b - n) and some from beyond either end
    (clipped back): a stop of n has no form from the end (0 is the axis' start)."""
    starts, stops = starts.copy(), stops.copy()
    k = starts.size
    flip = (rng.random(k) < 0.5) & (starts >= 0) & (starts < n)
    starts[flip] -= n
    flip = (rng.random(k) < 0.5) & (stops > 0) & (stops < n)
    stops[flip] -= n
    starts[(starts == 0) | (starts == -n)] = -n - 7
    stops[stops == n] = n + 100
    return starts, stops


def mixed_ranges(rng):
    """Every kind of range at once over ~23000 positions: 600 of 1-16, 60 of ~100, two of ~5000, 40 empty, gaps,
    shuffled, 7 positions in no range at the end."""
    lengths = np.concatenate([rng.integers(1, 17, 600), rng.integers(90, 111, 60), [5000, 4321], np.zeros(40, int)])
    return lay_out(rng, rng.permutation(lengths), tail=7)


def regime(name, rng):
    """(starts, stops, n) of one range-length regime, in shuffled order but CSR's (a range ends at the axis' end,
    unless the last one laid out is empty)."""
    if name == "tiny":
        return lay_out(rng, rng.integers(1, 17, 4000))
    if name == "hundred":
        return lay_out(rng, rng.integers(90, 111, 500))
    if name == "thousands":
        return lay_out(rng, rng.integers(4000, 6001, 12))
    if name == "long":  # few ranges of 2^17: "block" cuts each into parts to fill the GPU
        return lay_out(rng, [1 << 17, (1 << 17) + 3, 1 << 17, (1 << 17) - 1])
    if name == "hundred_and_long":  # auto: the few 8192 and longer leave the block kernel for the long ones
        lengths = np.concatenate([rng.integers(90, 111, 500), [8191, 8192, 8193, 50000, (1 << 16) + 7]])
        return lay_out(rng, rng.permutation(lengths))
    if name == "powerlaw":
        return lay_out(rng, np.minimum((rng.pareto(1.2, 3000) * 4).astype(np.int64) + 1, 50000))
    if name == "csr":
        n = 60000
        return (*csr_over(rng, n, 800), n)
    if name == "empty":  # half of them empty, a quarter reversed
        return lay_out(rng, np.where(rng.random(2000) < 0.5, 0, rng.integers(1, 40, 2000)))
    if name == "negative":
        starts, stops, n = lay_out(rng, rng.integers(1, 300, 300))
        return (*written_from_the_end(rng, starts, stops, n), n)
    if name == "at_end":  # a one-element range at the end, written (-1, 2**40)
        starts, stops, n = lay_out(rng, rng.integers(1, 50, 200), tail=1)
        return np.append(starts, -1), np.append(stops, 2 ** 40), n
    raise ValueError(name)


REGIMES = ["tiny", "hundred", "thousands", "long", "hundred_and_long", "powerlaw", "csr", "empty", "negative",
           "at_end"]


# ---------------------------------------------------------------- every operator x dtype x variant

OP_DTYPES = [(op, dtype) for op in SCAN_OPS for dtype in ("int32", "int64", "float32", "float64")] + \
    [("sum", "bool"), ("max", "bool"), ("sum", "float16")]


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("op, dtype", OP_DTYPES)
def test_every_operator_dtype_and_variant(op, dtype, variant, exclusive):
    rng = seeded("matrix", op, dtype, variant, exclusive)
    starts, stops, n = mixed_ranges(rng)
    a = data(rng, op, dtype, n)
    got = gpureduce.segmented_scan(op, cp.asarray(a), starts, stops, exclusive=exclusive, variant=variant)
    assert isinstance(got, cp.ndarray)
    check(op, got, a, starts, stops, 0, exclusive, variant)


# ---------------------------------------------------------------- every length regime

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", REGIMES)
@pytest.mark.parametrize("op, dtype, exclusive", [("sum", "float32", False), ("sum", "int64", True),
                                                  ("max", "float64", True), ("prod", "float64", False),
                                                  ("logsumexp", "float32", True)])
def test_every_length_regime(op, dtype, exclusive, name, variant):
    """Host bounds checked against NumPy, and the same bounds on the device give the same bits (the same plan:
    their check finds the same coverage and mean length)."""
    rng = seeded("regime", op, dtype, exclusive, name, variant)
    starts, stops, n = regime(name, rng)
    a = data(rng, op, dtype, n)
    x = cp.asarray(a)
    got = gpureduce.segmented_scan(op, x, starts, stops, exclusive=exclusive, variant=variant)
    check(op, got, a, starts, stops, 0, exclusive, f"{name} {variant}")
    again = gpureduce.segmented_scan(op, x, cp.asarray(starts), cp.asarray(stops), exclusive=exclusive,
                                     variant=variant)
    assert cp.asnumpy(again).tobytes() == cp.asnumpy(got).tobytes(), f"{name} {variant}: device bounds differ"


@pytest.mark.parametrize("variant", ["auto", "warp", "block"])
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("max", "int64")])
def test_ranges_of_millions(op, dtype, variant):
    """One range of 2^22 elements, then two of about 2^21 with gaps around them: "block" (and "auto") cut each into
    a thousand parts or more, whose prefixes a block scans."""
    rng = seeded("millions", op, dtype, variant)
    n = 1 << 22
    a = data(rng, op, dtype, n)
    x = cp.asarray(a)
    half = (1 << 21) + 9
    for starts, stops, exclusive in (([0], [n], False), ([half, 5], [n - 3, half], True)):
        got = gpureduce.segmented_scan(op, x, starts, stops, exclusive=exclusive, variant=variant)
        check(op, got, a, starts, stops, 0, exclusive, variant)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("long", [200, 1000, 8191, 8192, 8193, 50000, 1 << 17])
def test_long_ranges_among_short_ones(long, rows):
    """"auto" sends a range 8 times the mean length or longer (at least 128 elements beside the thread kernel, 8192
    beside the block kernel) to the long kernels, which cut it into parts of 8192, a warp each: a few such ranges
    among tiny ones (thread) and among ~100-long ones (block), around those switches, in every row of the input."""
    rng = seeded("long among short", long, rows)
    for short in (rng.integers(1, 17, 3000), rng.integers(90, 111, 600)):
        lengths = np.concatenate([short, [long, long + 1, 3 * long]])
        starts, stops, n = lay_out(rng, rng.permutation(lengths), tail=2)
        for op, dtype in (("sum", "float32"), ("max", "int64")):
            a = data(rng, op, dtype, (rows, n))
            x = cp.asarray(a)
            for exclusive in (False, True):
                got = gpureduce.segmented_scan(op, x, starts, stops, axis=1, exclusive=exclusive)
                check(op, got, a, starts, stops, 1, exclusive, f"long {long} among {short.mean():.0f}")


SIZES = [0, 1, 2, 31, 32, 33, 127, 128, 129, 2047, 2048, 2049, 4096, 4097, 65535, 65537, 1 << 20]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("n", SIZES)
def test_sizes_around_powers_of_two(n, variant):
    """One range over the whole axis, CSR offsets, disjoint ranges with gaps, zero ranges; sums and max."""
    rng = seeded("sizes", n, variant)
    a = data(rng, "sum", "float64", n)
    ints = data(rng, "max", "int32", n)
    x, xi = cp.asarray(a), cp.asarray(ints)
    cases = [(False, [0], [n]), (True, [0], [n]), (False, *csr_over(rng, n, max(1, n // 50))),
             (True, *ranges_over(rng, n, max(1, n // 100))), (False, [], [])]
    for exclusive, starts, stops in cases:
        got = gpureduce.segmented_scan("sum", x, starts, stops, exclusive=exclusive, variant=variant)
        check("sum", got, a, starts, stops, 0, exclusive, f"n={n} {variant}")
        got = gpureduce.segmented_scan("max", xi, starts, stops, exclusive=exclusive, variant=variant)
        check("max", got, ints, starts, stops, 0, exclusive, f"n={n} {variant}")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("op", SCAN_OPS)
def test_nan_propagates_as_in_numpys_scans(op, variant):
    """2% NaN: sum, prod, min, max and logsumexp carry it to the end of its range (as np.cumsum,
    np.maximum.accumulate, ...), nansum and nanprod read it as their identity (np.nancumsum, np.nancumprod)."""
    rng = seeded("nan", op, variant)
    lengths = np.concatenate([rng.integers(1, 17, 300), rng.integers(90, 111, 20), [3000]])
    starts, stops, n = lay_out(rng, rng.permutation(lengths), tail=3)
    a = data(rng, op, "float32", n)
    a[rng.random(n) < 0.02] = np.nan
    x = cp.asarray(a)
    for exclusive in (False, True):
        got = gpureduce.segmented_scan(op, x, starts, stops, exclusive=exclusive, variant=variant)
        check(op, got, a, starts, stops, 0, exclusive, variant)


# ---------------------------------------------------------------- layouts

@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape, axis, order", [((600, 40), 0, "C"), ((40, 600), 1, "C"), ((600, 40), 0, "F"),
                                                ((40, 600), 1, "F"), ((4, 300, 6), 1, "C"), ((3000, 3), -2, "C")])
def test_any_axis_of_row_and_column_layouts(shape, axis, order, variant):
    """The scanned axis contiguous (rows) or strided with the kept axis contiguous (columns: "auto" runs a thread
    per range there), in C and Fortran order, and a middle axis of three."""
    rng = seeded("layouts", shape, axis, order, variant)
    n = shape[axis]
    starts, stops = ranges_over(rng, n, 25)
    for op, dtype, exclusive in (("sum", "float32", False), ("max", "int64", True), ("prod", "float64", True)):
        a = data(rng, op, dtype, shape)
        x = cp.asarray(a)
        if order == "F":
            a, x = np.asfortranarray(a), cp.asfortranarray(x)
        got = gpureduce.segmented_scan(op, x, starts, stops, axis=axis, exclusive=exclusive, variant=variant)
        check(op, got, a, starts, stops, axis % len(shape), exclusive, f"{shape} {order} {variant}")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("view", ["every_other", "reversed", "reversed_rows", "reversed_columns", "host_every_other"])
def test_strided_and_reversed_views(view, variant):
    """Inputs read in place through their strides, negative ones included."""
    rng = seeded("views", view, variant)
    for op, dtype in (("sum", "float32"), ("max", "int32")):
        if view in ("every_other", "reversed", "host_every_other"):
            base, axis = data(rng, op, dtype, 20002), 0
        elif view == "reversed_rows":
            base, axis = data(rng, op, dtype, (40, 700)), 1
        else:
            base, axis = data(rng, op, dtype, (700, 40)), 0
        cut = {"every_other": np.s_[::2], "host_every_other": np.s_[::2], "reversed": np.s_[::-1],
               "reversed_rows": np.s_[:, ::-1], "reversed_columns": np.s_[::-1]}[view]
        a = base[cut]
        x = a if view == "host_every_other" else cp.asarray(base)[cut]
        starts, stops = ranges_over(rng, a.shape[axis], 60)
        for exclusive in (False, True):
            got = gpureduce.segmented_scan(op, x, starts, stops, axis=axis, exclusive=exclusive, variant=variant)
            assert kind_of(got) == kind_of(x)
            check(op, got, a, starts, stops, axis, exclusive, f"{view} {variant}")


# ---------------------------------------------------------------- inputs and bounds of every kind

@pytest.mark.parametrize("a_kind, bounds_kind", [
    ("numpy", "list"), ("numpy", "numpy"), ("cupy", "list"), ("cupy", "numpy"), ("cupy", "cupy"), ("cupy", "torch"),
    ("torch", "numpy"), ("torch", "torch"), ("torch", "cupy"), ("jax", "numpy"), ("jax", "jax")])
def test_inputs_and_bounds_of_every_kind(a_kind, bounds_kind):
    """The result is an array of the input's kind (NumPy for a host input); device bounds of any library, int32 or
    int64."""
    rng = seeded("kinds", a_kind, bounds_kind)
    n = 20000
    a = data(rng, "sum", "float32", n)
    starts, stops = ranges_over(rng, n, 300)
    starts, stops = written_from_the_end(rng, starts, stops, n)
    x = on(a_kind, a)
    for bounds_dtype in (np.int32, np.int64) if bounds_kind not in ("list", "jax") else (np.int32,):
        s, e = on(bounds_kind, starts.astype(bounds_dtype)), on(bounds_kind, stops.astype(bounds_dtype))
        for op, exclusive in (("sum", False), ("max", True)):
            got = gpureduce.segmented_scan(op, x, s, e, exclusive=exclusive)
            assert kind_of(got) == kind_of(x), (type(got), type(x))
            check(op, got, a, starts, stops, 0, exclusive, f"{a_kind} input, {bounds_kind} {bounds_dtype} bounds")


@pytest.mark.parametrize("bounds_dtype, n, starts, stops", [
    ("int16", 40000, [-10, 0, 20000, -5000], [-1, 15000, 32000, -10]),
    ("uint8", 300, [0, 100, 250, 200], [100, 200, 255, 100]),
])
@pytest.mark.parametrize("bounds_kind", ["cupy", "torch"])
def test_narrow_device_bounds_over_a_longer_axis(bounds_kind, bounds_dtype, n, starts, stops):
    """Bounds of a dtype narrower than the axis' length: counting from the end and clipping to the axis must not
    overflow the bounds' own dtype (the overlap check works on them in their library)."""
    rng = seeded("narrow", bounds_kind, bounds_dtype)
    a = data(rng, "sum", "float64", n)
    s = on(bounds_kind, np.array(starts, bounds_dtype))
    e = on(bounds_kind, np.array(stops, bounds_dtype))
    got = gpureduce.segmented_scan("sum", cp.asarray(a), s, e)
    check("sum", got, a, starts, stops, 0, False, f"{bounds_kind} {bounds_dtype}")


@pytest.mark.parametrize("bounds_kind", ["cupy", "torch"])
def test_device_bounds_are_checked(bounds_kind):
    """Overlap (after slice rules), dtype, dimensions and lengths of device bounds; device bounds need a device
    input, and starts and stops on one side."""
    def b(values, dtype=np.int64):
        return on(bounds_kind, np.array(values, dtype))

    x = cp.arange(10.0)
    for starts, stops in (([0, 3], [5, 8]), ([3, 0], [8, 5]), ([0, -3], [8, 10]), ([2, 2], [4, 4]),
                          ([0, 5, 5, 4], [4, 9, 5, 6])):
        with pytest.raises(ValueError, match="overlap"):
            gpureduce.segmented_scan("sum", x, b(starts), b(stops))
    with pytest.raises(ValueError, match="overlap"):  # checked along axis 1 of a 2-d input too
        gpureduce.segmented_scan("max", cp.ones((3, 10)), b([0, 3]), b([5, 8]), axis=1, variant="block")
    with pytest.raises(TypeError, match="must be integers"):
        gpureduce.segmented_scan("sum", x, b([0.0], np.float64), b([5]))
    with pytest.raises(ValueError, match="1-dimensional"):
        gpureduce.segmented_scan("sum", x, b([[0]]), b([[5]]))
    with pytest.raises(ValueError, match="same length"):
        gpureduce.segmented_scan("sum", x, b([0, 5]), b([5]))
    with pytest.raises(TypeError, match="both be host arrays or both device arrays"):
        gpureduce.segmented_scan("sum", x, b([0]), [5])
    with pytest.raises(TypeError, match="device array but the input is on the host"):
        gpureduce.segmented_scan("sum", np.arange(10.0), b([0, 5]), b([5, 10]))


@pytest.mark.parametrize("where", ["cupy", "cupy_strided", "numpy"])
@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("max", "int32"), ("prod", "float64"),
                                       ("logsumexp", "float32")])
def test_out_is_filled_and_returned(op, dtype, where):
    """out= poisoned first: every position written, the identity where no range is, and out= itself returned."""
    rng = seeded("out", op, dtype, where)
    n = 6000
    a = data(rng, op, dtype, n)
    starts, stops = ranges_over(rng, n, 80)
    rt = result_dtype(op, dtype)
    poison = np.nan if rt.kind == "f" else 77
    for exclusive in (False, True):
        if where == "numpy":
            x, out = a, np.full(n, poison, rt)
        else:
            x = cp.asarray(a)
            out = cp.full(2 * n, poison, rt)[::2] if where == "cupy_strided" else cp.full(n, poison, rt)
        got = gpureduce.segmented_scan(op, x, starts, stops, out=out, exclusive=exclusive)
        assert got is out
        check(op, out, a, starts, stops, 0, exclusive, where)


@pytest.mark.parametrize("op", SCAN_OPS)
def test_positions_in_no_range_hold_the_identity(op):
    """No range, or only empty ones (host or device bounds): the whole result is the identity, over out= poisoned
    first, for every dtype the operator has."""
    rng = seeded("identity", op)
    dtypes = ["int32", "float32", "float64"] + (["bool"] if op in ("sum", "max") else [])
    for dtype in dtypes:
        a = data(rng, op, dtype, (3, 500))
        rt = result_dtype(op, dtype)
        poison = np.nan if rt.kind == "f" else (not identity(op, rt)) if rt == np.bool_ else 77
        empties = ([5, 100, 300, 0], [5, 50, 300, 0])
        for starts, stops in (([], []), empties, tuple(cp.asarray(v, np.int64) for v in empties)):
            out = cp.full(a.shape, poison, rt)
            got = gpureduce.segmented_scan(op, cp.asarray(a), starts, stops, axis=1, out=out, exclusive=True)
            assert got is out
            assert (cp.asnumpy(out) == identity(op, rt)).all(), (op, dtype, starts)
        host = gpureduce.segmented_scan(op, a, [], [], axis=1)
        assert isinstance(host, np.ndarray) and host.dtype == rt and (host == identity(op, rt)).all()


def test_empty_inputs():
    """n = 0 along the axis, or zero elements elsewhere: an empty result of the input's shape and the scan's dtype."""
    for shape, axis in (((0,), 0), ((0, 5), 0), ((5, 0), 1), ((0, 5), 1)):
        for x in (np.zeros(shape, np.int32), cp.zeros(shape, np.int32)):
            got = gpureduce.segmented_scan("sum", x, [0, 2], [1, 5], axis=axis)
            assert got.shape == shape and got.dtype == np.int64 and kind_of(got) == kind_of(x)


def test_the_docstring_examples():
    a = np.arange(1, 9)
    offsets = np.array([0, 3, 8])
    want = [1, 3, 6, 4, 9, 15, 22, 30]
    assert gpureduce.segmented_scan("sum", a, offsets[:-1], offsets[1:]).tolist() == want
    assert gpureduce.segmented_scan("sum", cp.asarray(a), cp.asarray(offsets[:-1]),
                                    cp.asarray(offsets[1:])).get().tolist() == want
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    assert gpureduce.segmented_scan("max", x, [5, 0], [8, 3]).tolist() == [3, 3, 4, -np.inf, -np.inf, 9, 9, 9]
    assert gpureduce.segmented_scan("sum", a, offsets[:-1], offsets[1:], exclusive=True).tolist() == \
        [0, 1, 3, 0, 4, 9, 15, 22]
    y = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    assert gpureduce.groupby_scan("sum", y, [2, 0, 2, 1, 0]).tolist() == [1, 2, 4, 4, 7]
    assert gpureduce.groupby_scan("max", np.array([3.0, 1.0, 4.0, 1.0, 5.0]), [0, 0, 1, 1, 0],
                                  exclusive=True).tolist() == [-np.inf, 3, -np.inf, 4, 3]


# ---------------------------------------------------------------- streams and determinism

def busy(stream):
    """Queue a few large matrix products on `stream`: what is queued after them runs tens of milliseconds later."""
    with stream:
        m = cp.ones((4096, 4096), np.float32)
        for _ in range(8):
            m = m @ m * np.float32(1e-4)


@pytest.mark.parametrize("bounds_kind", ["numpy", "cupy"])
def test_stream_keyword_runs_after_that_streams_work(bounds_kind):
    """stream= a non-blocking stream: the input and the device bounds are written there behind slow work, the
    bounds first holding ranges that all overlap.  The check of the bounds, their cast and the scan must all wait
    for that work (a check read on another stream would see the overlapping ones and refuse)."""
    rng = seeded("stream", bounds_kind)
    n = 1 << 20
    a = data(rng, "sum", "float32", n)
    starts_h, stops_h = csr_over(rng, n, 1000)
    src_a, src_starts, src_stops = cp.asarray(a), cp.asarray(starts_h), cp.asarray(stops_h)
    x = cp.zeros(n, np.float32)
    starts = cp.zeros(starts_h.size, np.int64)   # every range [0, n): all overlap
    stops = cp.full(stops_h.size, n, np.int64)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    busy(s)
    with s:
        x[...] = src_a
        starts[...] = src_starts
        stops[...] = src_stops
    bounds = (starts, stops) if bounds_kind == "cupy" else (starts_h, stops_h)
    got = gpureduce.segmented_scan("sum", x, *bounds, stream=s)
    s.synchronize()
    check("sum", got, a, starts_h, stops_h, 0, False, f"stream= with {bounds_kind} bounds")


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_same_call_gives_the_same_bits(variant):
    rng = seeded("determinism", variant)
    lengths = np.concatenate([rng.integers(1, 17, 2000), [1 << 17, (1 << 17) + 5, 70000]])
    starts, stops, n = lay_out(rng, rng.permutation(lengths), tail=3)
    x = cp.asarray(data(rng, "sum", "float32", n))
    for op in ("sum", "logsumexp", "prod"):
        first = cp.asnumpy(gpureduce.segmented_scan(op, x, starts, stops, variant=variant)).tobytes()
        for _ in range(2):
            again = cp.asnumpy(gpureduce.segmented_scan(op, x, starts, stops, variant=variant)).tobytes()
            assert again == first, f"{op} {variant}: not deterministic"


# ---------------------------------------------------------------- groupby_scan

def group_reference(op, a, ids, axis=0, exclusive=False):
    """pandas' groupby(ids).cum<op>() without pandas: each group's elements, in their order along the axis, scanned
    alone and put back in their places."""
    a, ids = np.asarray(a), np.asarray(ids)
    rt = result_dtype(op, a.dtype)
    work = np.dtype(np.float64) if rt.kind == "f" else rt
    x = np.moveaxis(a, axis, 0).astype(work)
    out = np.empty(x.shape, work)
    for g in np.unique(ids):
        at = np.flatnonzero(ids == g)
        with np.errstate(invalid="ignore"):  # NaN data
            run = ACCUMULATE[op](x[at], axis=0)
        if exclusive:
            run = np.concatenate([np.full_like(run[:1], identity(op, work)), run[:-1]])
        out[at] = run
    return np.moveaxis(out, 0, axis)


def check_groups(op, got, a, ids, axis=0, exclusive=False, case=""):
    """groupby_scan's `got` against the reference; a float's bound grows with its group's size."""
    case = f"groupby {op} {a.dtype} axis={axis} exclusive={exclusive} {case}"
    got = to_numpy(got)
    rt = result_dtype(op, a.dtype)
    assert got.shape == a.shape and got.dtype == rt, f"{case}: {got.shape} {got.dtype}"
    want = group_reference(op, a, ids, axis, exclusive)
    if rt.kind in "biu" or op in ("min", "max"):
        np.testing.assert_array_equal(got, want.astype(rt), err_msg=case)
        return
    _, inverse, counts = np.unique(np.asarray(ids), return_inverse=True, return_counts=True)
    sizes = along(counts[inverse.reshape(-1)], axis, a.ndim)
    scale = group_reference("nansum", np.abs(a.astype(np.float64)), ids, axis, exclusive)
    assert_close(op, got, want, sizes, scale, case)


def random_ids(rng, n, groups=300):
    """Unsorted int64 ids, about `groups` distinct ones: negative, small, and huge (10**12 and beyond)."""
    third = groups // 3
    pool = np.unique(np.concatenate([rng.integers(-1000, 0, third), rng.integers(0, 1000, third),
                                     10 ** 12 + rng.integers(0, 10 ** 6, groups - 2 * third)]))
    return rng.choice(pool, n)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("op, dtype", [(op, dtype) for op in SCAN_OPS for dtype in ("int32", "float32", "float64")]
                         + [("sum", "bool"), ("max", "bool")])
def test_groupby_scan_every_operator(op, dtype, exclusive):
    rng = seeded("groupby", op, dtype, exclusive)
    n = 20000
    a = data(rng, op, dtype, n)
    ids = random_ids(rng, n)
    got = gpureduce.groupby_scan(op, cp.asarray(a), cp.asarray(ids), exclusive=exclusive)
    assert isinstance(got, cp.ndarray)
    check_groups(op, got, a, ids, 0, exclusive)


@pytest.mark.parametrize("kind, ids_kind", [("numpy", "numpy"), ("numpy", "list"), ("list", "list"),
                                            ("cupy", "cupy"), ("cupy", "numpy"), ("torch", "torch"),
                                            ("torch", "numpy"), ("jax", "jax")])
def test_groupby_scan_gives_the_inputs_kind(kind, ids_kind):
    """NumPy, CuPy, PyTorch and JAX inputs give their own kind back (a list: NumPy); ids of any kind and int dtype."""
    rng = seeded("groupby kinds", kind, ids_kind)
    n = 5000
    a = data(rng, "sum", "float32", n)
    ids = rng.integers(-20, 60, n).astype(np.int32 if kind == "jax" else np.int64)
    x = a.tolist() if kind == "list" else on(kind, a)
    for op, exclusive in (("sum", True), ("max", False)):
        got = gpureduce.groupby_scan(op, x, on(ids_kind, ids), exclusive=exclusive)
        assert kind_of(got) == ("numpy" if kind == "list" else kind), type(got)
        host = a.astype(np.float64) if kind == "list" else a  # a list of Python floats is float64
        check_groups(op, got, host, ids, 0, exclusive, kind)
    if kind in ("cupy", "numpy"):
        for id_dtype in (np.int8, np.uint16, np.int32):
            small = rng.integers(0, 100, n).astype(id_dtype)
            got = gpureduce.groupby_scan("sum", x, on(ids_kind, small))
            check_groups("sum", got, a, small.astype(np.int64), 0, False, f"{kind} {id_dtype.__name__} ids")


@pytest.mark.parametrize("op, dtype", [("sum", "float32"), ("logsumexp", "float32"), ("prod", "float64"),
                                       ("max", "int32"), ("nansum", "float64")])
def test_sorted_ids_give_the_bits_of_the_gathered_input(op, dtype):
    """Bitwise: the unsorted call equals, gathered by the stable order of its ids, the call on the sorted data
    with and without ids_sorted=True."""
    rng = seeded("sorted", op, dtype)
    n = 50000
    a = data(rng, op, dtype, n)
    if op == "nansum":
        a[rng.random(n) < 0.05] = np.nan
    ids = random_ids(rng, n, 500)
    order = np.argsort(ids, kind="stable")
    x, xs, ids_d, ids_s = cp.asarray(a), cp.asarray(a[order]), cp.asarray(ids), cp.asarray(ids[order])
    for exclusive in (False, True):
        unsorted = cp.asnumpy(gpureduce.groupby_scan(op, x, ids_d, exclusive=exclusive))
        check_groups(op, unsorted, a, ids, 0, exclusive)
        want = unsorted[order].tobytes()
        for ids_sorted in (True, False):
            got = gpureduce.groupby_scan(op, xs, ids_s, exclusive=exclusive, ids_sorted=ids_sorted)
            assert cp.asnumpy(got).tobytes() == want, f"{op} exclusive={exclusive} ids_sorted={ids_sorted}"
        host = gpureduce.groupby_scan(op, a[order], ids[order], exclusive=exclusive, ids_sorted=True)
        assert host.tobytes() == want, f"{op} exclusive={exclusive}: host input"


@pytest.mark.parametrize("shape, axis", [((30, 2000), 1), ((30, 2000), -1), ((2000, 30), 0), ((5, 700, 4), 1)])
def test_groupby_scan_along_any_axis(shape, axis):
    rng = seeded("groupby axis", shape, axis)
    ids = random_ids(rng, shape[axis], 40)
    for op, dtype, exclusive in (("sum", "float32", True), ("max", "int32", False)):
        a = data(rng, op, dtype, shape)
        got = gpureduce.groupby_scan(op, cp.asarray(a), ids, axis=axis, exclusive=exclusive)
        check_groups(op, got, a, ids, axis % len(shape), exclusive, str(shape))


@pytest.mark.parametrize("variant", VARIANTS)
def test_groupby_scan_edges(variant):
    """n = 0, n = 1, one group, every element its own group, two groups alternating, three huge groups (ranges
    that "block" cuts)."""
    rng = seeded("groupby edges", variant)
    cases = [np.zeros(0, np.int64), np.array([7]), np.full(3000, -5), rng.permutation(2000) * 10 ** 9,
             np.arange(3001) % 2, rng.integers(0, 3, 1 << 19)]
    for ids in cases:
        a = data(rng, "sum", "float32", ids.size)
        for exclusive in (False, True):
            got = gpureduce.groupby_scan("sum", cp.asarray(a), cp.asarray(ids), exclusive=exclusive, variant=variant)
            check_groups("sum", got, a, ids, 0, exclusive, f"{ids.size} elements, {np.unique(ids).size} groups")
        ints = data(rng, "max", "int64", ids.size)
        got = gpureduce.groupby_scan("max", cp.asarray(ints), ids, variant=variant)
        check_groups("max", got, ints, ids, 0, False, f"{ids.size} elements")


def test_groupby_scan_is_deterministic():
    rng = seeded("groupby determinism")
    n = 1 << 20
    x = cp.asarray(data(rng, "sum", "float32", n))
    ids = cp.asarray(random_ids(rng, n, 1000))
    for op in ("sum", "logsumexp"):
        first = cp.asnumpy(gpureduce.groupby_scan(op, x, ids)).tobytes()
        for _ in range(2):
            assert cp.asnumpy(gpureduce.groupby_scan(op, x, ids)).tobytes() == first, op


@pytest.mark.parametrize("ids_kind", ["cupy", "torch"])
def test_unsorted_device_ids_with_ids_sorted_are_refused(ids_kind):
    kind = "torch" if ids_kind == "torch" else "cupy"
    x = on(kind, np.arange(6.0))
    with pytest.raises(ValueError, match="not sorted"):
        gpureduce.groupby_scan("sum", x, on(ids_kind, np.array([0, 0, 2, 1, 3, 3])), ids_sorted=True)


def test_groupby_scan_stream_keyword():
    """stream=: the sort, the gather, the runs, the scan and the scatter run behind the work queued there."""
    rng = seeded("groupby stream")
    n = 1 << 18
    a, ids_h = data(rng, "sum", "float32", n), random_ids(rng, n, 200)
    src_a, src_ids = cp.asarray(a), cp.asarray(ids_h)
    x, ids = cp.zeros(n, np.float32), cp.zeros(n, np.int64)
    cp.cuda.Device().synchronize()
    s = cp.cuda.Stream(non_blocking=True)
    busy(s)
    with s:
        x[...] = src_a
        ids[...] = src_ids
    got = gpureduce.groupby_scan("sum", x, ids, exclusive=True, stream=s)
    s.synchronize()
    check_groups("sum", got, a, ids_h, 0, True, "stream=")


def test_beyond_2_to_the_31_elements():
    """Positions past 2^31 (64-bit offsets everywhere): a range ending below it, one across it, one above it."""
    free, _ = cp.cuda.runtime.memGetInfo()
    n = (1 << 31) + 1000
    if free < 6 * n:
        pytest.skip("not enough device memory")
    half = 1 << 31
    x = cp.ones(n, dtype=cp.int8)
    x[half + 5] = 7
    starts, stops = [0, half - 10, half + 10], [half - 10, half + 10, n]
    got = gpureduce.segmented_scan("max", x, starts, stops)
    assert [int(got[i]) for i in (half - 11, half + 4, half + 5, half + 9, half + 10, n - 1)] == [1, 1, 7, 7, 1, 1]
    del got
    got = gpureduce.segmented_scan("sum", x, starts, stops, dtype=np.int32)
    assert [int(got[i]) for i in (half - 11, half - 10, half + 4, half + 9, n - 1)] == \
        [half - 10, 1, 15, 26, n - half - 10]
    del got, x
