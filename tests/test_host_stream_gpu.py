"""Host arrays streamed through the device chunk by chunk (src/stream_host.c, issue 13).

A host input of more than _core.STREAM_FROM_BYTES moves through the device in chunks of at most
_core.STREAM_CHUNK_BYTES: whole rows, pieces of a row longer than a chunk (a reduction combines the pieces'
results in order, a scan carries each piece's last result into the next), or, across the rows of a block (a
column sum), whole rows behind the running result carried as one more row.  These tests put sizes on every side
of those boundaries, for every dtype family, operator and variant, and hold the results to NumPy's (integers
exactly, floats within gpureduce.testing.error_bound, which counts the extra roundings of the chunks).  A child
process caps the device memory gpureduce may use (GPUREDUCE_DEVICE_MEMORY_LIMIT) far below the arrays it
reduces and scans.  float16 and bfloat16 partials, carries and running rows are held in float32 (issue 36): the
streamed results are held to the same data's as a device array.
"""
import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce.testing import assert_matches_numpy, error_bound, to_numpy

try:
    import ml_dtypes

    BF16 = np.dtype(ml_dtypes.bfloat16)
except ImportError:
    BF16 = None

pytestmark = pytest.mark.gpu

CHUNK = _core.STREAM_CHUNK_BYTES
FROM = _core.STREAM_FROM_BYTES

RESULT_ITEMSIZE = {"sum": 8, "prod": 8}  # integer sums and products widen to 64 bits


def is_half(dtype):
    return dtype == np.float16 or (BF16 is not None and dtype == BF16)


def chunk_elements(op, dtype):
    """Elements per chunk of a whole-array call of `op` on `dtype` (a scan's result comes home chunk by chunk:
    the wider of input and result decides; a reduction's chunk is the input's).  float16 and bfloat16 sums and
    products, and their scans, are carried in float32 (src/stream_host.c: work_dtype): 4 bytes an element."""
    dtype = np.dtype(dtype)
    if is_half(dtype) and op.replace("cum", "") in ("sum", "prod"):
        return CHUNK // 4
    if not op.startswith("cum"):
        return CHUNK // dtype.itemsize
    out = RESULT_ITEMSIZE.get(op.replace("cum", ""), dtype.itemsize) if dtype.kind in "biu" else dtype.itemsize
    return CHUNK // max(dtype.itemsize, out)


def sizes(op, dtype):
    """Just above the streaming threshold, both sides of one chunk, two chunks, three and a bit."""
    c, first = chunk_elements(op, dtype), FROM // np.dtype(dtype).itemsize + 1
    return sorted({first, max(first, c - 1), max(first, c + 1), 2 * c, 3 * c + 7})


def data(dtype, n, rng, op):
    """Fresh random data whose exact results NumPy can hold: small integers, products of values near 1."""
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(n) < (0.999999 if "prod" in op else 0.5)
    if dtype.kind in "iu":
        if "prod" in op:  # mostly ones, some -1 / 2: products wrap like NumPy's, exactly
            return rng.choice(np.array([1, 1, 1, 1, 1, 1, 2, -1 if dtype.kind == "i" else 3], dtype), n)
        hi = min(np.iinfo(dtype).max, 1000)
        return rng.integers(0 if dtype.kind == "u" else -hi, hi, n, dtype=dtype)
    if "prod" in op:
        x = 1 + (rng.random(n) - 0.5) * (2.0 ** -12)
    else:
        x = rng.standard_normal(n)
    if dtype.kind == "c":
        x = x + 1j * (rng.standard_normal(n) if "prod" not in op else (rng.random(n) - 0.5) * 2.0 ** -12)
    return x.astype(dtype)


DTYPES = ["float32", "float64", "int32", "int64", "int8", "uint16", "bool", "float16", "complex64"]
OPS = ["sum", "prod", "min", "max", "cumsum", "cumprod", "cummax", "cummin"]
CASES = [(op, dt, n) for op in OPS for dt in DTYPES if not (dt.startswith("complex") and op[-3:] in ("min", "max"))
         for n in sizes(op, dt)]


@pytest.mark.parametrize("op,dtype,n", CASES, ids=[f"{o}-{d}-{n}" for o, d, n in CASES])
def test_whole_host_array_matches_numpy(op, dtype, n, rng):
    assert_matches_numpy(op, data(dtype, n, rng, op))


# Host copies of 1 MiB or more are split across CPU threads in page-aligned parts (src/host_copy.c), as many as
# the process has CPUs, up to 8.  Sizes just past a multiple of (parts x 4096) bytes, for every part count: the
# last few bytes fall into no part when the part size is rounded down (lost bytes at 1 MiB + 3 with 8 parts).
ODD_COPY_BYTES = sorted({parts * 4096 * -(-2**20 // (parts * 4096)) + r for parts in range(2, 17)
                         for r in {1, parts - 1}})


@pytest.mark.parametrize("nbytes", ODD_COPY_BYTES)
def test_every_byte_of_a_split_host_copy_arrives(nbytes, rng):
    """Uploads through the pinned buffer and the ring (the first piece of a streamed row is `nbytes` long) and a
    download through the pinned buffer, each with a marker in its last byte."""
    x = rng.integers(0, 200, nbytes, dtype=np.uint8)
    x[-1] = 255
    assert int(gpureduce.max(x)) == 255 and int(gpureduce.sum(x)) == int(x.sum(dtype=np.int64))
    np.testing.assert_array_equal(gpureduce.cumsum(x, dtype=np.uint8), np.cumsum(x, dtype=np.uint8))
    streamed = np.concatenate([x, rng.integers(0, 200, chunk_elements("sum", "uint8"), dtype=np.uint8)])
    assert int(gpureduce.max(streamed)) == 255 and int(gpureduce.sum(streamed)) == int(streamed.sum(dtype=np.int64))


REDUCE_VARIANTS = [v.name for v in gpureduce.variants(kind="reduce")]
SCAN_VARIANTS = [v.name for v in gpureduce.variants(kind="scan")]


@pytest.mark.parametrize("dtype", ["int64", "float32"])
@pytest.mark.parametrize("variant", REDUCE_VARIANTS)
def test_every_reduce_variant_streams(variant, dtype, rng):
    """Three and a bit chunks: every piece's result goes to a partial, the partials are reduced by the variant."""
    n = 3 * chunk_elements("sum", dtype) + 5
    x = data(dtype, n, rng, "sum")
    for op in ("sum", "max"):
        assert_matches_numpy(op, x, variant=variant)


@pytest.mark.parametrize("dtype", ["int64", "float32", "int32"])
@pytest.mark.parametrize("variant", SCAN_VARIANTS)
def test_every_scan_variant_carries_across_chunks(variant, dtype, rng):
    """The carry from piece to piece, for every scan variant, also where the input is cast (int32 -> int64)."""
    n = 3 * chunk_elements("cumsum", dtype) + 5
    assert_matches_numpy("cumsum", data(dtype, n, rng, "cumsum"), variant=variant)


AXIS_CASES = [
    # rows that fit a chunk: whole rows per chunk, the last chunk shorter
    ((700, 3001), -1), ((4, 5, 70001), -1), ((4, 5, 70001), 2), ((3001, 700), 1),
    # rows longer than a chunk: pieces
    ((3, 2**21 + 5), -1), ((2, 3, 2**21 + 3), -1),
    # blocks of rows reduced or scanned across the rows (slabs): the running result carried as one more row
    ((2**11, 2**11 + 1), 0), ((2**20, 3), 0), ((4, 3001, 700), 1), ((3, 2**20), 0), ((3, 5, 2**18), 1),
    # rows wider than half a chunk: strip by strip of their columns; several axes at once: staged whole
    ((5, 2**21 + 3), 0), ((3, 2, 2**21 + 3), 1), ((64, 2**15), (0, 1)),
]


@pytest.mark.parametrize("shape,axis", AXIS_CASES, ids=[f"{s}-{a}" for s, a in AXIS_CASES])
@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_axis_calls_on_host_arrays(shape, axis, dtype, rng):
    x = data(dtype, int(np.prod(shape)), rng, "sum").reshape(shape)
    scan_axis = axis if isinstance(axis, int) else None
    for op in ("sum", "max", "mean", "argmax", "cumsum", "cummin"):
        a = scan_axis if op.startswith("cum") or op.startswith("arg") else axis
        if op.startswith("arg") and a is None:
            continue
        assert_matches_numpy(op, x, axis=a)
    assert_matches_numpy("sum", x, axis=axis, keepdims=True)
    assert_matches_numpy("min", x, axis=axis, initial=-5)
    if scan_axis is not None:
        assert_matches_numpy("cumsum", x, axis=scan_axis, exclusive=True)


DETERMINISTIC_SCANS = [v.name for v in gpureduce.variants(kind="scan") if v.deterministic]


SLAB_CASES = [(op, dt) for op in ("sum", "prod", "max", "cumsum", "cumprod", "cummin")
              for dt in ("int32", "int8", "bool", "float16", "complex64", "uint16")
              if not (dt == "complex64" and op.endswith(("min", "max")))]  # complex numbers have no order here


@pytest.mark.parametrize("op,dtype", SLAB_CASES, ids=[f"{o}-{d}" for o, d in SLAB_CASES])
def test_slabs_with_a_cast_or_a_narrow_dtype(op, dtype, rng):
    """Across the rows of a block, where the input is cast to the result dtype behind the carried row (int32 ->
    int64 sums, bool -> int64) or stays narrow (float16, uint16 min/max)."""
    x = data(dtype, 7 * (3 * 2**21 // 7 + 3), rng, op).reshape(-1, 7)  # just over 3 * 2^21 elements, rows of 7
    assert_matches_numpy(op, x, axis=0)
    assert_matches_numpy(op, x.reshape(3, -1, 7), axis=1)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_streamed_results_are_bitwise_repeatable(dtype, rng):
    """Chunk boundaries depend on the shape only: a deterministic variant stays bitwise the same when streamed."""
    x = data(dtype, 3 * chunk_elements("sum", dtype) + 7, rng, "sum")
    scans = [lambda a, v=v: gpureduce.cumsum(a, variant=v) for v in DETERMINISTIC_SCANS]
    rows = [lambda a: gpureduce.sum(a[:a.size // 217 * 217].reshape(-1, 217), axis=k) for k in (0, 1)]
    for fn in [gpureduce.sum] + rows + scans:
        first = np.asarray(fn(x))
        for _ in range(3):
            np.testing.assert_array_equal(np.asarray(fn(x)), first)


def test_repeated_result_sizes_land_in_pinned_memory(rng):
    """The second cumsum of a size gets a pinned result (the DMA lands in it); the pool takes it back."""
    x = data("float32", 2 * chunk_elements("cumsum", "float32") + 3, rng, "cumsum")
    want = np.cumsum(x, dtype=np.float64)
    def cumsum(a):
        return gpureduce.cumsum(a, variant=DETERMINISTIC_SCANS[-1])  # bitwise repeatable

    first = cumsum(x)
    before = _core.resource_stats()["pinned_results_in_use"]
    second = cumsum(x)
    held = _core.resource_stats()
    assert held["pinned_results_in_use"] >= before + x.nbytes, held
    np.testing.assert_array_equal(second, first)
    assert second.flags.writeable and second.flags.c_contiguous and second.flags.owndata is False
    np.testing.assert_allclose(second, want, rtol=1e-3, atol=1e-2 * np.sqrt(x.size))
    second[:] = 0  # the caller's own array
    del second
    after = _core.resource_stats()
    assert after["pinned_results_in_use"] == before, after
    third = cumsum(x)  # the block again, overwritten
    np.testing.assert_array_equal(third, first)


def run_child(code, env):
    script = textwrap.dedent(code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                          env={**os.environ, **env})
    assert done.returncode == 0, f"child failed ({done.returncode})\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


LIMITED = """
    import json, numpy as np, gpureduce
    from gpureduce import _core
    from gpureduce.testing import assert_matches_numpy
    rng = np.random.default_rng(5)
    checked = []
    x = rng.standard_normal(2**27, dtype=np.float32)          # 512 MiB, eight times the cap
    i = rng.integers(-2**40, 2**40, 2**26, dtype=np.int64)     # 512 MiB
    for op, arr, kw in [("sum", x, {}), ("cumsum", x, {}), ("max", x, {}), ("sum", i, {}), ("cumsum", i, {}),
                        ("cumprod", i, {}), ("sum", x.reshape(2**10, 2**17), {"axis": 1}),
                        ("mean", x.reshape(2**10, 2**17), {"axis": -1}),
                        ("cumsum", i.reshape(4, 2**24), {"axis": 1}),
                        ("argmin", x.reshape(2**12, 2**15), {"axis": 1}),
                        ("sum", x.reshape(2**14, 2**13), {"axis": 0}),
                        ("cumsum", i.reshape(2**16, 2**10), {"axis": 0}),
                        # rows wider than half a chunk: strip by strip (a reduction's result stays on the
                        # device whole, so within the cap; a scan's goes home strip by strip)
                        ("sum", x.reshape(64, 2**21), {"axis": 0}),
                        ("max", i.reshape(64, 2**20), {"axis": 0}),
                        ("cumsum", x.reshape(4, 2**25), {"axis": 0}),
                        ("cummax", i.reshape(2, 2**25), {"axis": 0})]:
        assert_matches_numpy(op, arr, **kw)
        checked.append(op)
    stats = _core.resource_stats()
    try:
        gpureduce.sum(x, where=x > 0)     # a host mask: staged whole, beyond the cap
        refused = None
    except gpureduce.OutOfMemoryError as e:
        refused = str(e)
    print(json.dumps({"checked": checked, "stats": stats, "refused": refused}))
"""


def test_arrays_far_larger_than_the_device_memory_cap():
    """GPUREDUCE_DEVICE_MEMORY_LIMIT=64M: 512 MiB host arrays still reduce and scan (the device holds a few
    chunks), gpureduce's device memory stays under the cap, and a call that would stage a whole host operand
    says so (OutOfMemoryError naming the limit)."""
    cap = 64 << 20
    out = run_child(LIMITED, {"GPUREDUCE_DEVICE_MEMORY_LIMIT": "64M"})
    assert len(out["checked"]) == 16
    used = out["stats"]["pool_reserved"] + out["stats"]["exec_device_bytes"]
    assert used <= cap, out["stats"]
    assert out["refused"] and "GPUREDUCE_DEVICE_MEMORY_LIMIT" in out["refused"], out


def test_a_malformed_device_memory_limit_is_named():
    out = run_child("""
        import json, numpy as np, gpureduce
        try:
            gpureduce.sum(np.ones(10))
            err = None
        except ValueError as e:
            err = str(e)
        print(json.dumps({"err": err}))
    """, {"GPUREDUCE_DEVICE_MEMORY_LIMIT": "lots"})
    assert out["err"] and "GPUREDUCE_DEVICE_MEMORY_LIMIT" in out["err"] and "512M" in out["err"], out


def test_pinned_results_limit():
    """GPUREDUCE_PINNED_RESULTS_LIMIT=0: no result is pinned, however often its size is asked for; a malformed
    value is a ValueError naming the variable."""
    code = """
        import json, numpy as np, gpureduce
        from gpureduce import _core
        x = np.ones(2**21, np.float32)
        results = [gpureduce.cumsum(x) for _ in range(3)]
        print(json.dumps({"in_use": _core.resource_stats()["pinned_results_in_use"],
                          "right": all(float(r[-1]) == 2**21 for r in results)}))
    """
    out = run_child(code, {"GPUREDUCE_PINNED_RESULTS_LIMIT": "0"})
    assert out == {"in_use": 0, "right": True}, out
    out = run_child(code, {})
    assert out["in_use"] >= 2 * 2**21 * 4 and out["right"], out  # the second and third results are pinned
    bad = run_child("""
        import json, numpy as np, gpureduce
        try:
            gpureduce.cumsum(np.ones(2**21, np.float32))
            err = None
        except ValueError as e:
            err = str(e)
        print(json.dumps({"err": err}))
    """, {"GPUREDUCE_PINNED_RESULTS_LIMIT": "-1"})
    assert bad["err"] and "GPUREDUCE_PINNED_RESULTS_LIMIT" in bad["err"], bad


# ---------------------------------------------------------------- issue 36: float16 and bfloat16 carried in float32


def half_dtype(name):
    if name == "bfloat16" and BF16 is None:
        pytest.skip("bfloat16 needs ml_dtypes")
    return BF16 if name == "bfloat16" else np.dtype(name)


def on_device(fn, x, **kwargs):
    """`fn` on a device copy of `x` (a gpureduce.DeviceArray: reduced or scanned whole on the device, its float16
    accumulated in float32 and rounded once), brought home."""
    return to_numpy(fn(_core.to_device(x), **kwargs))


@pytest.mark.parametrize("variant", ["auto", "cub"])
@pytest.mark.parametrize("extra", [0, 1], ids=["issue", "odd"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_streamed_half_sum_of_ones_then_minus_ones_is_zero(dtype, extra, variant):
    """Issue 36: gpureduce.sum(np.concatenate([np.ones(2**22), -np.ones(2**22)]).astype(np.float16)) gave nan; NumPy
    and the same data as a device array give 0.0.  The host array streams as a row cut into pieces, and the old code
    held each piece's partial in the result dtype: in float16 the pieces of +1s summed to inf, those of -1s to -inf,
    and inf + -inf is nan.  In bfloat16 (float32's range) the issue's partials are powers of two, exact, and the old
    code was right; one +1 and one -1 more (`odd`) made a piece's partial 2^22 - 2, which bfloat16 rounds to 2^22,
    and the old result was 2.0 (float16: nan again).  Held in float32, every partial is exact and the result is the
    device array's, 0.0, with `cub` too (its kernels read no float16 into float32: each piece is cast first).
    The cumsum of the same data climbs to 2^22 (inf in float16 from 65520 on) and comes back down to 0: the old
    float16 carry, inf once a piece ended above 65504, kept every later element inf; each element is now its
    exact prefix rounded once, as on the device."""
    dt = half_dtype(dtype)
    n = 2**22 + extra
    x = np.concatenate([np.ones(n), -np.ones(n)]).astype(dt)
    assert x.nbytes > FROM and x.size > chunk_elements("sum", dt)  # streamed, a row cut into pieces
    streamed, device = gpureduce.sum(x, variant=variant), on_device(gpureduce.sum, x, variant=variant)
    assert streamed.dtype == dt and device.dtype == dt
    assert float(device) == 0.0
    assert float(streamed) == 0.0, f"streamed {dtype} sum ({variant}): {streamed}, the device array's 0.0"
    streamed, device = gpureduce.cumsum(x, variant=variant), on_device(gpureduce.cumsum, x, variant=variant)
    with np.errstate(over="ignore"):
        want = np.cumsum(x.astype(np.float64)).astype(dt)  # every prefix exact in float32, then rounded once
    assert streamed.dtype == dt and float(streamed[-1]) == 0.0, f"streamed {dtype} cumsum ends in {streamed[-1]}"
    want = want.astype(np.float32)  # compared in float32, which holds every float16 and bfloat16 value (inf too)
    np.testing.assert_array_equal(device.astype(np.float32), want)
    np.testing.assert_array_equal(streamed.astype(np.float32), want)


# The three shapes a host array streams in (src/job.h), each reduced or scanned along `axis`:
HALF_SHAPES = {
    "pieces": ((3 * 2**21 + 7,), -1),  # a row longer than a chunk, cut into pieces: a partial (or carry) each
    "rows": ((24, 2**17 + 3), -1),     # rows shorter than a chunk: whole rows per chunk, nothing carried
    "slabs": ((2**18, 32), 0),         # a column reduction of a C-ordered matrix: chunks of rows behind a running row
}


def along(shape, axis, profile):
    """`profile` (one value per position along `axis`) laid along `axis` of `shape`, C-ordered."""
    ax = axis % len(shape)
    return np.ascontiguousarray(np.broadcast_to(profile.reshape([-1 if i == ax else 1 for i in range(len(shape))]),
                                                shape))


def climb_and_return(shape, axis, dtype):
    """Small integers whose prefix sums along `axis` climb far past float16's 65504 and come back: +k over the first
    half of the axis, -k over the second (k = 1, 2, 3 across it), 0 for an odd last element.  Every sum is 0 and
    every prefix an integer below 2^24, exact in float32 in any association: the device's and the streamed results
    are exactly the exact ones rounded once."""
    ax = axis % len(shape)
    steps = np.zeros(shape[ax])
    steps[:shape[ax] // 2], steps[shape[ax] // 2:2 * (shape[ax] // 2)] = 1, -1
    kept = tuple(side for i, side in enumerate(shape) if i != ax)
    k = np.expand_dims(1 + np.arange(math.prod(kept)).reshape(kept) % 3, ax)  # 1, 2, 3 across the axis
    return (along(shape, axis, steps) * k).astype(dtype)


def lopsided(shape, axis, rng):
    """Random float16 values, positive over the first half of `axis` and negative over the second (magnitudes
    uniform in [0.5, 1.5)): partial sums in the millions (pieces) or hundreds of thousands (slabs), sums of a few
    hundred."""
    m = shape[axis % len(shape)]
    sign = along(shape, axis, np.where(np.arange(m) < m // 2, 1.0, -1.0))
    return (sign * rng.uniform(0.5, 1.5, shape)).astype(np.float16)


def grow_and_shrink(shape, axis):
    """Factors whose running product along `axis` climbs far past 65504 and comes back below 1: 20480 factors
    1 + 2^-10 first (their product about e^20, 4.9e8), 40960 factors 1 - 2^-11 last (about e^-20), ones between.
    Every product is finite in float32; the whole one, about 0.985, in float16."""
    m = shape[axis % len(shape)]
    factors = np.ones(m)
    factors[:20480], factors[m - 40960:] = 1 + 2.0**-10, 1 - 2.0**-11
    return along(shape, axis, factors).astype(np.float16)


def assert_within_float32_bound(op, x, axis, streamed, device):
    """Both finite, and each within gpureduce.testing.error_bound (float32 accumulation, one float16 rounding) of the
    float64 result: the streamed result may differ from the device's by the association of its float32 sum (pieces
    or chunks of rows, against the device's own tiles), by no more than that."""
    reference = getattr(np, op)(x.astype(np.float64), axis=axis)
    bound = error_bound(op, x, x.dtype, axis=axis, reference=reference)
    for name, got in (("device", device), ("streamed", streamed)):
        got = np.asarray(got).astype(np.float64)
        assert np.isfinite(got).all(), f"{name} float16 {op} along {axis}: {got[~np.isfinite(got)][:5]} (not finite)"
        error = np.abs(got - reference)
        assert (error <= bound).all(), f"{name} float16 {op}: error {error.max():.3g} > bound {bound.max():.3g}"


@pytest.mark.parametrize("shape_name", list(HALF_SHAPES))
def test_float16_sums_and_products_are_carried_in_float32(shape_name, rng):
    """float16 sums and products of host arrays whose partial results pass 65504, in the three streamed shapes,
    against the same data as a device array.  The old code (partials and running rows in float16): pieces gave nan
    (a piece's sum or product inf, a later one's -inf or 0, and inf + -inf or inf * 0 is nan), slabs gave inf (the
    running row inf after the first chunk of rows, and inf ever after); whole rows carry nothing and were right."""
    shape, axis = HALF_SHAPES[shape_name]
    x = climb_and_return(shape, axis, np.float16)
    assert x.nbytes > FROM
    streamed, device = gpureduce.sum(x, axis=axis), on_device(gpureduce.sum, x, axis=axis)
    assert np.asarray(streamed).dtype == np.float16
    np.testing.assert_array_equal(device, np.zeros_like(device))  # every partial exact: 0 in any association
    np.testing.assert_array_equal(streamed, device)
    x = lopsided(shape, axis, rng)
    assert_within_float32_bound("sum", x, axis, gpureduce.sum(x, axis=axis), on_device(gpureduce.sum, x, axis=axis))
    x = grow_and_shrink(shape, axis)
    assert_within_float32_bound("prod", x, axis, gpureduce.prod(x, axis=axis),
                                on_device(gpureduce.prod, x, axis=axis))


@pytest.mark.parametrize("shape_name", list(HALF_SHAPES))
def test_float16_cumsum_is_carried_in_float32(shape_name):
    """A float16 cumsum whose prefixes climb past 65504 (inf in float16 from 65520 on, on the device too) and come
    back to 0, in the three streamed shapes.  The prefixes are integers below 2^24, exact in float32, so the bound is
    0: every element is its exact prefix rounded once, as on the device.  The old code carried the last float16
    result into the next piece or chunk of rows: once that was inf, every later element was inf where the device's
    is finite (pieces, slabs); whole rows carry nothing and were right."""
    shape, axis = HALF_SHAPES[shape_name]
    x = climb_and_return(shape, axis, np.float16)
    streamed, device = gpureduce.cumsum(x, axis=axis), on_device(gpureduce.cumsum, x, axis=axis)
    with np.errstate(over="ignore"):
        want = np.cumsum(x.astype(np.float64), axis=axis).astype(np.float16)
    assert streamed.dtype == np.float16 and np.isfinite(device).any() and not np.isfinite(device).all()
    finite = np.isfinite(device)
    assert np.isfinite(streamed[finite]).all(), \
        f"{np.count_nonzero(~np.isfinite(streamed[finite]))} streamed elements inf or nan where the device's are finite"
    np.testing.assert_array_equal(device, want)
    np.testing.assert_array_equal(streamed, device)


@pytest.mark.parametrize("shape_name", list(HALF_SHAPES))
def test_float16_min_max_and_integer_sums_stream_exactly(shape_name, rng):
    """What carries no rounding stays exact in the three streamed shapes: float16 min and max (held in float16: they
    pick an element), int16 sums and cumsums (int64, wrapping exactly), equal to the device array's and NumPy's."""
    shape, axis = HALF_SHAPES[shape_name]
    x = (rng.standard_normal(shape) * 1000).astype(np.float16)
    for fn, np_fn in ((gpureduce.min, np.min), (gpureduce.max, np.max)):
        streamed = fn(x, axis=axis)
        np.testing.assert_array_equal(streamed, on_device(fn, x, axis=axis))
        np.testing.assert_array_equal(streamed, np_fn(x, axis=axis))
    i = climb_and_return(shape, axis, np.int16)
    for fn, np_fn in ((gpureduce.sum, np.sum), (gpureduce.cumsum, np.cumsum)):
        streamed = fn(i, axis=axis)
        assert np.asarray(streamed).dtype == np.int64
        np.testing.assert_array_equal(streamed, on_device(fn, i, axis=axis))
        np.testing.assert_array_equal(streamed, np_fn(i, axis=axis))
