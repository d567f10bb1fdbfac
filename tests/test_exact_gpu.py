"""The variant "exact" (issue 41) on the GPU: gpureduce.sum(x, variant="exact") of a float32 or float64 array is
the exact real sum rounded once to nearest-even, the same bits for any order of the elements, any alignment, any
size and any input kind; NaN and infinities as IEEE 754 says, +0.0 for an exact zero as NumPy's sums.

The reference is gpureduce._bounds.correctly_rounded_sum (math.fsum, float32 ties settled by the exact rest),
itself checked against Python's fractions in tests/test_exact_sum_cpu.py, whose hard sets (Neal's and the
ReproBLAS papers' kinds: cancellations, subnormals, the full exponent range, ties, overflow) run here too."""
import warnings

import numpy as np
import pytest

import gpureduce
from conftest import DEVICE_LIBRARIES, _torch
from gpureduce._bounds import correctly_rounded_sum
from gpureduce._planning.operands import BFLOAT16, finfo
from gpureduce.testing import assert_matches_numpy, to_numpy
from test_exact_sum_cpu import cases

cupy = pytest.importorskip("cupy")
pytestmark = pytest.mark.gpu

FLOATS = ["float32", "float64"]
# every power of two and block boundary of the kernel: a 16-byte vector is 4 or 2 elements, a block's step of the
# grid-stride loop 256 x 2 vectors, the grid 4 blocks per SM
SIZES = [1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097,
         65535, 65536, 65537, 2**20 - 1, 2**20 + 3, 2**22 + 5]


def exact_bits(got, want):
    got, want = np.asarray(got)[()], np.asarray(want)[()]
    if np.isnan(want):
        return bool(np.isnan(got))
    return got.dtype == want.dtype and got.tobytes() == want.tobytes()


def gr_exact(x):
    r = gpureduce.sum(x, variant="exact")
    return r.get()[()] if isinstance(r, cupy.ndarray) else np.asarray(r)[()]


def draw(kind, dtype, n, rng):
    info = np.finfo(dtype)
    if kind == "normal":
        return rng.standard_normal(n).astype(dtype)
    if kind == "uniform":
        return rng.random(n).astype(dtype)
    if kind == "log-uniform":
        return (rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-4, 4, n)).astype(dtype)
    if kind == "full range":
        e = rng.integers(info.minexp - info.nmant, info.maxexp - 24, n)
        return (rng.choice([-1, 1], n) * np.ldexp(rng.random(n) + 0.5, e)).astype(dtype)
    if kind == "cancellation":
        half = rng.standard_normal((n + 1) // 2).astype(dtype) * np.dtype(dtype).type(1e6)
        x = np.concatenate([half, -half])[:n]
        return x[rng.permutation(n)]
    raise ValueError(kind)


KINDS = ["normal", "uniform", "log-uniform", "full range", "cancellation"]


@pytest.mark.parametrize("dtype", FLOATS)
def test_hard_sets(dtype):
    """Every hard set of the CPU check, on the device: the correctly rounded bits."""
    bad = []
    for name, x in cases(np.dtype(dtype).type):
        want = correctly_rounded_sum(x, dtype)
        got = gr_exact(cupy.asarray(x))
        if not exact_bits(got, want):
            bad.append(f"{name} (n={x.size}): got {got!r}, exact {want!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_sizes_and_distributions(dtype, kind):
    rng = np.random.default_rng()
    for n in SIZES:
        x = draw(kind, dtype, n, rng)
        want = correctly_rounded_sum(x, dtype)
        got = gr_exact(cupy.asarray(x))
        assert exact_bits(got, want), f"{kind} n={n}: got {got!r}, exact {want!r}"


@pytest.mark.parametrize("dtype", FLOATS)
def test_the_same_bits_in_any_order_alignment_and_kind(dtype):
    """A permutation, a reversal, every misalignment of a view, a host array (small and streamed-size), a tensor:
    one answer, the correctly rounded one."""
    rng = np.random.default_rng()
    n = 3 * 2**20 + 7
    x = draw("full range", dtype, n, rng)
    want = correctly_rounded_sum(x, dtype)
    d = cupy.asarray(x)
    answers = {"cupy": gr_exact(d), "permuted": gr_exact(d[cupy.asarray(rng.permutation(n))]),
               "reversed": gr_exact(cupy.ascontiguousarray(d[::-1])), "numpy": gr_exact(x)}
    for offset in (1, 2, 3):  # views starting 4, 8 or 12 bytes (float64: 8, 16, 24) past a 16-byte boundary
        padded = cupy.concatenate([cupy.zeros(offset, dtype), d])[offset:]
        assert (padded.data.ptr % 16 != 0) == (offset * np.dtype(dtype).itemsize % 16 != 0)
        answers[f"offset {offset}"] = gr_exact(padded)
    for name, make in sorted(DEVICE_LIBRARIES.items()):  # CuPy, PyTorch, Numba: a 0-d array of each
        try:
            device = make(x)
        except pytest.skip.Exception:  # that library is not installed here
            continue
        answers[name] = to_numpy(gpureduce.sum(device, variant="exact"))[()]
    bad = {k: v for k, v in answers.items() if not exact_bits(v, want)}
    assert not bad, f"exact {want!r}; differing: {bad}"


def test_a_large_host_array_is_exact_too():
    """A host array above the streaming size is not cut into pieces whose rounded sums would be added: the whole
    array goes to the device and is summed exactly."""
    rng = np.random.default_rng()
    x = draw("log-uniform", "float32", 20 * 2**20 + 3, rng)
    assert exact_bits(gr_exact(x), correctly_rounded_sum(x, "float32"))


@pytest.mark.parametrize("dtype", FLOATS)
def test_special_values(dtype):
    t = np.dtype(dtype).type
    big = np.finfo(dtype).max
    n = 70001
    for name, where, value, want in [("nan", 123, np.nan, np.nan), ("+inf", 5000, np.inf, np.inf),
                                     ("-inf", n - 1, -np.inf, -np.inf)]:
        x = np.ones(n, dtype)
        x[where] = value
        got = gr_exact(cupy.asarray(x))
        assert exact_bits(got, t(want)), (name, got)
    x = np.ones(n, dtype)
    x[7], x[60000] = np.inf, -np.inf
    assert np.isnan(gr_exact(cupy.asarray(x)))
    x = np.zeros(n, dtype)
    x[1000], x[50000] = big, big  # the exact sum overflows: +inf
    assert gr_exact(cupy.asarray(x)) == np.inf
    x[60000] = -big  # ... and comes back
    assert exact_bits(gr_exact(cupy.asarray(x)), t(big))
    for zeros in (np.zeros(n, dtype), -np.zeros(n, dtype), np.zeros(0, dtype)):
        got = gr_exact(cupy.asarray(zeros))
        assert got == 0 and not np.signbit(got), got  # NumPy's sums start from +0.0
    assert exact_bits(gr_exact(cupy.asarray(np.array([t(2.5)]))), t(2.5))


def test_many_elements_of_one_value():
    """2^24 + 1 ones: float32's plain sums stall at 2^24 (1 + 2^24 rounds back); the exact sum is 2^24 rounded
    once, and 2^24 + 2 (two ones more) is representable exactly."""
    assert gr_exact(cupy.ones(2**24 + 1, cupy.float32)) == np.float32(2**24)
    assert gr_exact(cupy.ones(2**24 + 2, cupy.float32)) == np.float32(2**24 + 2)
    x = cupy.full(2**22, 0.1, cupy.float32)
    want = correctly_rounded_sum(np.full(2**22, 0.1, np.float32), "float32")
    assert exact_bits(gr_exact(x), want)


def test_beyond_2_to_the_31_elements():
    free, _ = cupy.cuda.runtime.memGetInfo()
    n = 2**31 + 8
    if free < 4 * n + (1 << 30):
        pytest.skip("not enough device memory")
    x = cupy.ones(n, cupy.float32)
    x[-1] = 2.0**-20  # the last element: a tail past 2^31 that rounds the result
    got = gr_exact(x)
    assert got == np.float32(n - 1 + 2.0**-20), got  # 2^31 + 7 + 2^-20 rounds to 2^31 (ulp 256)
    del x


def test_deterministic_and_graph_capturable():
    x = cupy.asarray(draw("normal", "float32", 2**20 + 3, np.random.default_rng()))
    first = gr_exact(x)
    assert all(exact_bits(gr_exact(x), first) for _ in range(5))
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        gpureduce.sum(x, variant="exact")  # the kernel loaded, the stream used once, outside the capture
        stream.synchronize()
        stream.begin_capture()
        r = gpureduce.sum(x, variant="exact")
        graph = stream.end_capture()
    assert not isinstance(r.data.mem, cupy.cuda.memory.UnownedMemory)  # CuPy's own: no allocation the graph keeps
    for factor in (2, 4, 8):  # replayed on new data in the same buffer (2x, 4x, 8x the exact sum, rounded alike)
        x *= 2
        cupy.cuda.Device().synchronize()
        graph.launch(stream)
        stream.synchronize()
        assert exact_bits(r.get()[()], np.float32(first * factor))


# ---------------------------------------------------------------- float16 and bfloat16: float32's digits, one rounding

HALVES = ["float16", "bfloat16"]


def half_device(x):
    """`x` on the device: a CuPy array (float16), a PyTorch tensor (bfloat16: CuPy has none), else the host array."""
    if x.dtype == BFLOAT16:
        try:
            torch = _torch()
        except pytest.skip.Exception:
            return x
        return torch.from_numpy(x.view(np.int16)).view(torch.bfloat16).cuda()
    return cupy.asarray(x)


def gr_exact_any(x):
    return to_numpy(gpureduce.sum(x, variant="exact"))[()]


def half_draw(kind, dtype, n, rng):
    """Data of a half-precision format: the kinds of draw() with exponents the format holds (the full range's top
    kept below max / n, so that most sums stay finite)."""
    info = finfo(np.dtype(dtype))
    if kind == "full range":
        top = max(int(info.maxexp) - 1 - int(np.ceil(np.log2(max(n, 2)))), int(info.minexp) + 1)
        e = rng.integers(int(info.minexp) - int(info.nmant), top, n)
        return (rng.choice([-1, 1], n) * np.ldexp(rng.random(n) + 0.5, e)).astype(dtype)
    if kind == "log-uniform":
        return (rng.choice([-1, 1], n) * 10.0 ** rng.uniform(-3, 3, n)).astype(dtype)
    if kind == "cancellation":
        half = (rng.standard_normal((n + 1) // 2) * 100).astype(dtype)
        x = np.concatenate([half, -half])[:n]
        return x[rng.permutation(n)]
    return draw(kind, "float32", n, rng).astype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", HALVES)
def test_half_formats_sizes_and_distributions(dtype, kind):
    """A float16 or bfloat16 sum is the exact sum rounded once to the input's format (NumPy's result dtype):
    every size around the kernel's 8-element vectors, blocks and grid."""
    dtype = np.dtype(dtype) if dtype == "float16" else BFLOAT16
    rng = np.random.default_rng()
    for n in SIZES:
        x = half_draw(kind, dtype, n, rng)
        want = correctly_rounded_sum(x, dtype)
        got = gr_exact_any(half_device(x))
        assert exact_bits(got, want), f"{kind} n={n}: got {got!r}, exact {want!r}"


@pytest.mark.parametrize("dtype", HALVES)
def test_half_formats_edges(dtype):
    """Ties each way and broken by a bit far below, the largest value and the tie above it (to infinity), a run of
    ones past the format's last exact integer, subnormals, NaN and infinities, +0.0 for an exact zero."""
    dt = np.dtype(dtype) if dtype == "float16" else BFLOAT16
    info = finfo(dt)
    eps, tiny, big = float(info.eps), float(info.smallest_subnormal), float(info.max)
    last_exact = 2.0 ** (int(info.nmant) + 1)  # float16: 2048, bfloat16: 256
    cases = [[1.0, eps / 2], [1.0 + eps, eps / 2], [1.0, eps / 2, tiny], [1.0, eps / 2, -tiny], [-1.0, -eps / 2],
             [tiny], [tiny, tiny, tiny], [-tiny, tiny / 2 if tiny / 2 > 0 else tiny], [big],
             [big, 2.0 ** (int(info.maxexp) - 1) * eps / 2], [big, big, -big], [big, big],
             [1.0] * int(last_exact + 1), [1.0] * int(last_exact + 2), [0.0] * 9, [-0.0] * 9,
             [1.0, np.nan, 2.0], [np.inf, 1.0], [-np.inf, 3.0], [np.inf, -np.inf], []]
    bad = []
    for values in cases:
        x = np.array(values, np.float64).astype(dt)
        for padding in (0, 5000):  # alone, and among zeros (vectors, several threads)
            y = np.concatenate([x, np.zeros(padding, dt)])[np.random.default_rng(padding).permutation(x.size + padding)]
            want = correctly_rounded_sum(y, dt)
            got = gr_exact_any(half_device(y))
            if not exact_bits(got, want):
                bad.append(f"{values[:4]}... (n={y.size}): got {got!r}, exact {want!r}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("dtype", HALVES)
def test_half_formats_the_same_bits_in_any_order_alignment_and_kind(dtype):
    dt = np.dtype(dtype) if dtype == "float16" else BFLOAT16
    rng = np.random.default_rng()
    n = 2**21 + 7
    x = half_draw("full range", dt, n, rng)
    want = correctly_rounded_sum(x, dt)
    answers = {"host": gr_exact_any(x), "reversed host": gr_exact_any(np.ascontiguousarray(x[::-1])),
               "permuted host": gr_exact_any(x[rng.permutation(n)])}
    d = half_device(x)
    if not isinstance(d, np.ndarray):
        answers["device"] = gr_exact_any(d)
        for offset in (1, 3, 5, 7):  # views 2 to 14 bytes past a 16-byte boundary
            answers[f"offset {offset}"] = gr_exact_any(half_device(np.concatenate([np.zeros(offset, dt), x]))[offset:])
    bad = {k: v for k, v in answers.items() if not exact_bits(v, want)}
    assert not bad, f"exact {want!r}; differing: {bad}"


def test_half_formats_min_and_max_are_autos():
    """exact's min and max (any dtype) and integer sums are exact in any order: they run auto's kernels, of any
    dtype auto reads, along axes too."""
    x = np.random.default_rng(0).standard_normal((33, 65)).astype(np.float16)
    d = cupy.asarray(x)
    assert to_numpy(gpureduce.max(d, variant="exact"))[()] == x.max()
    np.testing.assert_array_equal(to_numpy(gpureduce.min(d, axis=0, variant="exact")), x.min(axis=0))
    i = np.arange(1000, dtype=np.int32).reshape(10, 100)
    np.testing.assert_array_equal(to_numpy(gpureduce.sum(cupy.asarray(i), axis=1, variant="exact")), i.sum(axis=1))


def test_what_exact_refuses_and_what_it_passes_on():
    x = cupy.arange(10, dtype=cupy.float32).reshape(2, 5)
    # a complex sum is one of each part (tests/test_exact_complex_gpu.py)
    assert_matches_numpy("sum", x.astype(cupy.complex64) * (1 - 2j), axis=1, variant="exact")
    with pytest.raises(ValueError, match="prod"):
        gpureduce.prod(x, variant="exact")
    # integer sums, min and max are exact in any order: auto's kernels, NumPy's answers
    i = cupy.arange(-5, 100000, dtype=cupy.int32)
    assert int(gpureduce.sum(i, variant="exact")) == int(np.arange(-5, 100000).sum())
    assert float(gpureduce.max(x, variant="exact")) == 9.0 and float(gpureduce.min(x, variant="exact")) == 0.0
    assert "exact" in next(v for v in gpureduce.variants(kind="reduce") if v.name == "exact").properties


def test_hypothesis_any_permutation_any_values():
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    @hypothesis.settings(max_examples=150, deadline=None, derandomize=False)
    @hypothesis.given(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=1, max_size=3000),
                      st.randoms())
    def check(values, random):
        x = np.array(values, np.float32)
        want = correctly_rounded_sum(x, "float32")
        order = list(range(x.size))
        random.shuffle(order)
        assert exact_bits(gr_exact(cupy.asarray(x)), want)
        assert exact_bits(gr_exact(cupy.asarray(x[order])), want)

    check()


# ---- the exact mean: the exact sum divided by the count, rounded once (issue 41)

MEAN_SIZES = [1, 2, 3, 7, 31, 33, 255, 257, 1025, 4097, 65537, 2**20 + 3]


def gr_exact_mean(x):
    return to_numpy(gpureduce.mean(x, variant="exact"))[()]


def any_dtype(dtype):
    return BFLOAT16 if dtype == "bfloat16" else np.dtype(dtype)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dtype", FLOATS + HALVES)
def test_mean_sizes_and_distributions(dtype, kind):
    """gpureduce.mean(x, variant="exact") is the exact sum divided by the count, rounded once to the input's
    format (NumPy's result dtype), at every size class; where NumPy's rounds its sum first, this does not."""
    dt = any_dtype(dtype)
    rng = np.random.default_rng()
    for n in MEAN_SIZES:
        x = draw(kind, dtype, n, rng) if dtype in FLOATS else half_draw(kind, dt, n, rng)
        want = correctly_rounded_sum(x, dt, count=n)
        got = gr_exact_mean(half_device(x) if dtype in HALVES else cupy.asarray(x))
        assert exact_bits(got, want), f"{kind} n={n}: got {got!r}, exact {want!r}"


@pytest.mark.parametrize("dtype", FLOATS + HALVES)
def test_mean_edges(dtype):
    """A sum beyond the format's range whose mean is inside it (the largest value twice: its mean, exactly),
    quotients that tie or fall just either side of one, subnormal means, NaN and infinities, the mean of nothing
    (NaN, with NumPy's warning), host, CuPy and (bfloat16) PyTorch inputs alike."""
    dt = any_dtype(dtype)
    info = finfo(dt)
    eps, tiny, big = float(info.eps), float(info.smallest_subnormal), float(info.max)
    cases = [[big, big], [big, big, big], [-big, -big, big], [1.0, 2.0], [1.0, 1.0, 2.0], [1.0, 0.0, 0.0],
             [1.0 + eps, 1.0 + 2 * eps], [1.0, 1.0 + eps, 1.0 + eps], [tiny, 0.0], [tiny, 0.0, 0.0], [-tiny, 0.0],
             [tiny] * 3 + [0.0], [0.0] * 5, [-0.0] * 5, [1.0, np.nan], [np.inf, 1.0], [np.inf, -np.inf],
             [-np.inf, 2.0]]
    bad = []
    for values in cases:
        x = np.array(values, np.float64).astype(dt)
        for y in (x, np.concatenate([x, np.zeros(3000, dt)])):  # alone, and among zeros (the count changes)
            want = correctly_rounded_sum(y, dt, count=y.size)
            for got in (gr_exact_mean(y), gr_exact_mean(half_device(y) if dtype in HALVES else cupy.asarray(y))):
                if not exact_bits(got, want):
                    bad.append(f"{values[:4]} (n={y.size}): got {got!r}, exact {want!r}")
    assert not bad, "\n".join(bad)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        assert np.isnan(gr_exact_mean(np.zeros(0, dt)))


@pytest.mark.parametrize("dtype", FLOATS)
def test_mean_the_same_bits_in_any_order_alignment_and_kind(dtype):
    rng = np.random.default_rng()
    n = 2**21 + 5
    x = draw("full range", dtype, n, rng)
    want = correctly_rounded_sum(x, dtype, count=n)
    answers = {"host": gr_exact_mean(x), "reversed": gr_exact_mean(cupy.asarray(x[::-1].copy())),
               "permuted": gr_exact_mean(cupy.asarray(x[rng.permutation(n)])),
               "offset": gr_exact_mean(cupy.asarray(np.concatenate([np.zeros(1, dtype), x]))[1:])}
    for name, make in DEVICE_LIBRARIES.items():
        try:
            answers[name] = gr_exact_mean(make(x))
        except pytest.skip.Exception:  # that library is not installed here
            continue
    bad = {k: v for k, v in answers.items() if not exact_bits(v, want)}
    assert not bad, f"exact {want!r}; differing: {bad}"


def test_mean_what_exact_passes_on_and_refuses():
    """An integer mean runs auto's kernels (NumPy's float64 answer); a floating mean along an axis, with dtype= or
    where= is exact's too (tests/test_exact_axes_gpu.py), held to its bits by gpureduce.testing; a complex mean
    each part's exact mean (tests/test_exact_complex_gpu.py)."""
    i = cupy.arange(-5, 100001, dtype=cupy.int32)
    assert float(gpureduce.mean(i, variant="exact")) == np.arange(-5, 100001).mean()
    x = cupy.asarray(draw("full range", "float32", 10, np.random.default_rng()).reshape(2, 5))
    for kwargs in ({"axis": 1}, {"dtype": cupy.float64}, {"where": x > 0}, {}):
        assert_matches_numpy("mean", x, variant="exact", **kwargs)  # the exact mean's bits (testing's zero bound)
    assert_matches_numpy("mean", x.astype(cupy.complex64) * (3 + 1j), variant="exact")


# ---- the exact nansum and nanmean: the elements that are not NaN, summed exactly (and divided by their count),
# rounded once (issue 41)

@pytest.mark.parametrize("op", ["nansum", "nanmean"])
@pytest.mark.parametrize("dtype", FLOATS + HALVES)
def test_nan_forms_skip_nans_exactly(dtype, op):
    """gpureduce.nansum / nanmean(x, variant="exact"): a NaN adds nothing (NumPy's nansum reads it as 0, nanmean
    leaves it out of the count), the rest is summed exactly (and divided by the count of the rest) and rounded
    once; only NaNs: nansum +0.0, nanmean NaN; an infinity stays, both infinities give NaN."""
    dt = any_dtype(dtype)
    rng = np.random.default_rng()
    func = getattr(gpureduce, op)
    mean = op == "nanmean"
    for kind in KINDS:
        for n in MEAN_SIZES:
            x = draw(kind, dtype, n, rng) if dtype in FLOATS else half_draw(kind, dt, n, rng)
            x[rng.random(n) < 0.1] = np.nan
            numbers = x[~np.isnan(x.astype(np.float32) if dtype in HALVES else x)]
            want = correctly_rounded_sum(numbers, dt, count=numbers.size if mean else None)
            got = to_numpy(func(half_device(x) if dtype in HALVES else cupy.asarray(x), variant="exact"))[()]
            assert exact_bits(got, want), f"{kind} n={n}: got {got!r}, exact {want!r}"
    for values, want in (([np.nan] * 5, np.nan if mean else 0.0), ([np.nan, np.inf, 1.0], np.inf),
                         ([np.nan, -np.inf], -np.inf), ([np.inf, np.nan, -np.inf], np.nan),
                         ([np.nan, 1.0, 2.0, np.nan], 1.5 if mean else 3.0)):
        x = np.array(values, np.float64).astype(dt)
        for source in (x, half_device(x) if dtype in HALVES else cupy.asarray(x)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # nanmean of NaNs only: NumPy's warning
                got = to_numpy(func(source, variant="exact"))[()]
            assert exact_bits(got, np.array(want).astype(dt)[()]), (values, got)
            assert want != 0 or not np.signbit(got), (values, got)  # NumPy's +0.0
    # held to the same bits by gpureduce.testing (its zero bound for exact)
    x = draw("full range", "float32", 4099, rng).astype(dt) if dtype in FLOATS else half_draw("normal", dt, 4099, rng)
    x[::7] = np.nan
    assert_matches_numpy(op, x, variant="exact")
