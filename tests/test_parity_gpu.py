"""NumPy parity of every reduction and scan, as hypothesis property tests, on the GPU.

Each example draws a dtype (all 14), a shape of up to 4 dimensions (zero-size sides included, at most
MAX_SIZE elements), a memory layout (C, Fortran, transposed, stepped, reversed, byte-swapped), an axis,
keepdims / where / initial / dtype= / out= / exclusive, the input's home (NumPy or CuPy, with the same view
built on each side) and the entry point (``gpureduce.sum`` or ``gpureduce.reduce("sum", ...)``).  The result
must match NumPy on the same host array:

* dtype and shape exactly, and the kind of object (NumPy scalar for a 0-d result, else a NumPy array for a
  host input, a ``gpureduce.DeviceArray`` for a device input, ``out`` itself when given);
* values exactly for integer and bool results and for min/max/argmin/argmax/cummax/cummin (first occurrence
  and NaN propagation included); floating and complex results within ``gpureduce.testing.error_bound``
  around a float64 / complex128 reference: ``SLACK * eps(accumulator) * log2(n) * sum|x|`` for sums
  (divided by the count for means, ``cumsum(|x|)`` for scans), ``SLACK * eps * sqrt(n) * log2(n) * |ref|``
  for products, plus the result's own rounding.  NumPy's own float16 sums along a strided axis accumulate in
  float16 and fall outside that bound: the float64 reference, not NumPy's float16 value, is the truth here;
* when NumPy raises (an empty min/max without initial, argmin of an empty sequence, a where mask for
  min/max without initial), the same exception type with the same message.

Examples per test: ``GR_HYPOTHESIS_EXAMPLES`` (default 200).  An example is counted (conftest.count_example, the
"hypothesis examples run" line of the summary, and per test) only once its checks have all run and passed;
``--hypothesis-show-statistics`` prints hypothesis' own statistics per test.  Only the too_slow health check is
suppressed (a GPU example's time is the device's, not the strategy's): a strategy that draws too much data or
filters too much fails its test.  Hypothesis prints the failing example and a ``@reproduce_failure`` blob;
``--hypothesis-seed=N`` replays a whole run.
"""
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gpureduce
from conftest import count_example
from conftest import DEVICE_LIBRARIES
from gpureduce.testing import error_bound

pytestmark = pytest.mark.gpu

EXAMPLES = int(os.environ.get("GR_HYPOTHESIS_EXAMPLES", "200"))
PROPERTY = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=False,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)

DTYPES = [np.dtype(d) for d in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128")]
REDUCTIONS = ["sum", "prod", "min", "max", "mean"]
ARG_REDUCTIONS = ["argmin", "argmax"]
SCANS = ["cumsum", "cumprod", "cummax", "cummin"]
SCAN_OP = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}
EXACT_OPS = {"min", "max", "argmin", "argmax", "cummax", "cummin"}
FAMILY = {"sum": "sum", "mean": "sum", "cumsum": "sum", "prod": "prod", "cumprod": "prod"}  # else "minmax"

MAX_SIZE = 20000  # elements per hypothesis example: keeps an example well under a millisecond of GPU work
# sides at the kernels' warp / block / tile boundaries
BOUNDARY_SIDES = [31, 32, 33, 127, 128, 129, 255, 256, 257, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096,
                  4097, 8191, 8193, 16385]
# The variants that must do everything (axis, keepdims, where, initial, dtype=, out=, mean/argmin/argmax, all
# dtypes, any layout); the spec says auto and cub.  The others are the teaching variants, tested on what they do.
FULL_VARIANTS = ["auto", "cub"]
TEACHING = [v for v in gpureduce.variants(kind="reduce") if v.name not in FULL_VARIANTS]
# where= masks given with a CuPy input: a NumPy mask, a CuPy mask, or both kinds (drawn per example)
DEVICE_WHERE_KINDS = ("numpy", "cupy")


@pytest.fixture(scope="module")
def cp():
    """CuPy, or None where it is missing (then only host inputs and NumPy outs are drawn)."""
    try:
        import cupy
    except ImportError:
        return None
    return cupy


def sources(cp):
    return ["host", "cupy"] if cp is not None else ["host"]


def out_kinds(cp):
    return [None, "numpy", "cupy"] if cp is not None else [None, "numpy"]


# ---------------------------------------------------------------- strategies

SIDES = st.one_of(
    st.integers(0, 6),
    st.integers(0, 80),
    st.sampled_from(BOUNDARY_SIDES),
    st.integers(0, MAX_SIZE),
)


@st.composite
def shapes(draw, min_dims=0, max_dims=4):
    """Up to 4-d, zero-size sides included; the product of max(side, 1) stays within MAX_SIZE, so the
    output of a reduction over a zero-size side stays small too."""
    ndim = draw(st.integers(min_dims, max_dims))
    shape, budget = [], MAX_SIZE
    for _ in range(ndim):
        side = min(draw(SIDES), budget)
        shape.append(side)
        budget //= max(side, 1)
    return tuple(draw(st.permutations(shape)))


STEPS = [slice(None), slice(None, None, 2), slice(1, None, 2), slice(None, None, 3)]
REVERSALS = [slice(None), slice(None, None, -1), slice(None, None, -2)]


@st.composite
def layouts(draw, ndim):
    """View transformations applied identically to the NumPy and the CuPy copy of a C-contiguous base."""
    if ndim == 0:
        return []
    kind = draw(st.sampled_from(["C", "F", "T", "step", "reverse", "mixed"]))
    steps = []
    if kind == "F":
        steps.append(("F", None))
    if kind in ("T", "mixed"):
        steps.append(("T", tuple(draw(st.permutations(range(ndim))))))
    if kind in ("step", "mixed"):
        steps.append(("slice", tuple(draw(st.sampled_from(STEPS)) for _ in range(ndim))))
    if kind in ("reverse", "mixed"):
        steps.append(("slice", tuple(draw(st.sampled_from(REVERSALS)) for _ in range(ndim))))
    return steps


def apply_layout(xp, a, steps):
    for kind, arg in steps:
        if kind == "F":
            a = xp.asfortranarray(a)
        elif kind == "T":
            a = a.transpose(arg)
        else:
            a = a[arg]
    return a


def reduction_axes(ndim):
    """None, an int (negative too), or a tuple of distinct axes (the empty tuple too)."""
    choices = [st.none(), hnp.valid_tuple_axes(ndim)]
    if ndim:
        choices.append(st.integers(-ndim, ndim - 1))
    return st.one_of(*choices)


def single_axes(ndim):
    return st.one_of(st.none(), st.integers(-ndim, ndim - 1)) if ndim else st.none()


@st.composite
def where_shapes(draw, shape):
    """A shape that broadcasts to `shape`: some sides 1, some leading dimensions dropped."""
    kept = [side if draw(st.booleans()) else 1 for side in shape]
    drop = draw(st.integers(0, len(shape)))
    return tuple(kept[drop:])


def dtype_params(op, dt):
    """dtype= values NumPy accepts ('same_kind'), as a np.dtype, a scalar type or a name.

    float16 only for float16 inputs: NumPy then accumulates along strided axes in float16 and can overflow
    midway where a float32 accumulator does not.  No complex dtype= for real products: complex overflow
    makes NaN patterns that depend on the order of the multiplications."""
    if op == "mean":
        cands = [np.dtype(np.complex64), np.dtype(np.complex128)] if dt.kind == "c" else \
            [np.dtype(np.float32), np.dtype(np.float64)]
    else:
        cands = [d for d in DTYPES if np.can_cast(dt, d, "same_kind") and (d.name != "float16" or dt.name == "float16")]
        if op in ("prod", "cumprod") and dt.kind != "c":
            cands = [d for d in cands if d.kind != "c"]
    spelled = st.sampled_from(cands).flatmap(
        lambda d: st.sampled_from([d, d.type, d.name]))
    return st.one_of(st.none(), st.none(), spelled)


def initial_values(op, dt, res):
    """initial= within the input dtype's range (and the result dtype's, for integers)."""
    if dt.kind == "b":
        return st.booleans()
    if op == "prod":
        if dt.kind in "iu":
            odd = [1, 3, 5, 7] + ([-1, -3, -5, -7] if dt.kind == "i" else [])
            return st.sampled_from(odd)
        if dt.kind == "f":
            return st.sampled_from([1.0, -1.0, 0.5, 2.0, 1.5])
        return st.sampled_from([1 + 0j, -1j, 0.5 + 0.5j])
    if dt.kind in "iu":
        s = hnp.from_dtype(dt).map(int)
        if res.kind in "iu":
            info = np.iinfo(res)
            s = s.map(lambda v: min(max(v, int(info.min)), int(info.max)))
        return s
    if op in ("min", "max"):  # any value, NaN, inf and subnormals included
        s = hnp.from_dtype(dt, allow_nan=dt.kind == "f")
    elif dt.kind == "f":
        s = hnp.from_dtype(dt, min_value=-100, max_value=100, allow_nan=False)
    else:
        s = hnp.from_dtype(dt, max_magnitude=100, allow_nan=False, allow_infinity=False)
    return s.map(lambda v: dt.type(v).item())


# ---------------------------------------------------------------- data

REAL_SPECIALS = np.array([np.nan, np.inf, -np.inf, -0.0])
COMPLEX_SPECIALS = np.array([complex(np.nan, 0), complex(1, np.nan), complex(np.inf, 0), complex(-np.inf, 1),
                             complex(0, -np.inf), complex(-0.0, 0)])
FEW = np.array([-2.0, -1.0, -0.0, 0.0, 0.5, 1.0, 2.0])


def make_values(family, dt, shape, rng, *, few=False, specials=False, scale=1.0, prod_scale=1.0):
    """A C-contiguous host array of `shape`.

    sum: integers over the dtype's full range (sums wrap like NumPy's), floats in [-1, 1] * scale.
    prod: odd integers in [-7, 7], floats and complex of magnitude 2**U(-prod_scale, prod_scale) (no
    overflow or underflow), bools mostly True.  minmax: full range or a few distinct values (ties: the
    first occurrence counts), NaN / inf / -0.0 sprinkled in when `specials`."""
    n = int(np.prod(shape, dtype=np.int64))
    if dt.kind == "b":
        return (rng.random(n) < (0.9 if family == "prod" else rng.uniform(0.1, 0.9))).reshape(shape)
    if dt.kind in "iu":
        if family == "prod":
            odd = [1, 3, 5, 7] + ([-1, -3, -5, -7] if dt.kind == "i" else [])
            x = rng.choice(np.array(odd, dtype=dt), n)
        elif few and family == "minmax":
            info = np.iinfo(dt)
            x = rng.integers(max(int(info.min), -3), min(int(info.max), 3), n, dtype=dt, endpoint=True)
        else:
            info = np.iinfo(dt)
            x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        return x.reshape(shape)
    cplx = dt.kind == "c"
    if family == "prod":
        mag = np.exp2(rng.uniform(-prod_scale, prod_scale, n))
        x = mag * (np.exp(1j * rng.uniform(-np.pi, np.pi, n)) if cplx else rng.choice([-1.0, 1.0], n))
    elif few:
        x = rng.choice(FEW, n) + (1j * rng.choice(FEW, n) if cplx else 0)
    else:
        x = (rng.uniform(-1, 1, n) + (1j * rng.uniform(-1, 1, n) if cplx else 0)) * scale
    x = x.astype(dt)
    if specials and n and (family == "minmax" or not cplx):
        k = int(rng.integers(1, min(n, 4) + 1))
        x[rng.integers(0, n, k)] = rng.choice(COMPLEX_SPECIALS if cplx else REAL_SPECIALS, k)
    return x.reshape(shape)


def prod_scale_for(dts, n):
    """Per-factor log2 magnitude: the random walk of the product's exponent stays ~9 sigma inside the
    narrowest floating range involved, for any order of the multiplications."""
    exps = [np.finfo(d).maxexp for d in dts if d.kind in "fc"]
    if not exps:
        return 1.0
    return min(1.0, 0.2 * min(exps) / math.sqrt(max(n, 1)))


def poison(xp, out, expected):
    """NaN for floating outs, the 0x5A byte pattern for integers, the opposite of the answer for bools."""
    dt = out.dtype
    if dt.kind in "fc":
        out.fill(complex(np.nan, np.nan) if dt.kind == "c" else np.nan)
    elif dt.kind == "b":
        out[...] = xp.asarray(np.logical_not(expected))
    else:
        out.fill(np.frombuffer(b"\x5a" * dt.itemsize, dtype=dt)[0])


# ---------------------------------------------------------------- NumPy's answers and the bounds

def numpy_call(op, x, axis, kw):
    if op in ("cummax", "cummin"):
        ufunc = np.maximum if op == "cummax" else np.minimum
        return ufunc.accumulate(x.ravel() if axis is None else x, axis=0 if axis is None else axis)
    return getattr(np, op)(x, axis=axis, **kw)


def scan_identity(op, dt):
    if op == "cumsum":
        return dt.type(0)
    if op == "cumprod":
        return dt.type(1)
    big = op == "cummin"
    if dt.kind == "b":
        return dt.type(big)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return dt.type(info.max if big else info.min)
    return dt.type(np.inf if big else -np.inf)


def shift_exclusive(a, axis, fill):
    """The inclusive scan `a` turned exclusive along `axis`: `fill` first, the last element dropped."""
    out = np.empty_like(a)
    if a.shape[axis] == 0:
        return out
    head = [slice(None)] * a.ndim
    head[axis] = slice(0, 1)
    dst = list(head)
    dst[axis] = slice(1, None)
    src = list(head)
    src[axis] = slice(None, -1)
    out[tuple(head)] = fill
    out[tuple(dst)] = a[tuple(src)]
    return out


def float_reference(op, x, axis, kw, res_dt, exclusive=False):
    """(float64 / complex128 reference, element-wise bound) for a floating or complex result."""
    x64 = np.asarray(x).astype(np.complex128 if res_dt.kind == "c" else np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if op in ("cumsum", "cumprod"):
            xs, ax = (x64.ravel(), 0) if axis is None else (x64, axis)
            ref = getattr(np, op)(xs, axis=ax)
            if exclusive:
                ref = shift_exclusive(ref, ax, op == "cumprod")
        else:
            ref = np.asarray(getattr(np, op)(x64, axis=axis, **{k: v for k, v in kw.items() if k != "dtype"}))
    bound = error_bound(op, x, res_dt, axis=axis, keepdims=kw.get("keepdims", False), initial=kw.get("initial"),
                        where=kw.get("where", True), exclusive=exclusive, reference=ref)
    return ref, bound


def assert_values(got, expected, ref, bound, what):
    assert got.dtype == expected.dtype, f"result dtype {got.dtype}, NumPy gives {expected.dtype}; {what}"
    assert got.shape == expected.shape, f"result shape {got.shape}, NumPy gives {expected.shape}; {what}"
    if bound is None:
        np.testing.assert_array_equal(got, expected, err_msg=what, strict=True)
        return
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(got[~finite], expected[~finite], err_msg=f"non-finite results; {what}")
    g = got[finite].astype(ref.dtype)
    r, b = ref[finite], np.broadcast_to(bound, ref.shape)[finite]
    err = np.abs(g - r)
    ok = err <= b  # NaN (a poisoned element left behind) fails
    if not ok.all():
        i = int(np.argmin(ok))
        pytest.fail(f"{int((~ok).sum())} of {ok.size} values off; e.g. got {g[i]!r}, reference {r[i]!r}, "
                    f"|error| {err[i]:.3g} > bound {b[i]:.3g}; {what}")


# ---------------------------------------------------------------- one call, checked

def result_kind(a):
    """The type an array result of device input `a` has: the input's own for the libraries that take a result
    back (CuPy, PyTorch, JAX), else gpureduce.DeviceArray."""
    root = type(a).__module__.partition(".")[0]
    return type(a) if root in ("cupy", "torch", "jax", "jaxlib") else gpureduce.DeviceArray


def numpy_dtype(dt):
    """NumPy's dtype of a result's dtype (PyTorch's `torch.int64` read by its name)."""
    return np.dtype(str(dt).removeprefix("torch.")) if type(dt).__module__.startswith("torch") else np.dtype(dt)


def fetch(res):
    """A host copy of a result: NumPy scalar or array, gpureduce.DeviceArray, CuPy array or PyTorch tensor."""
    if callable(getattr(res, "cpu", None)) and callable(getattr(res, "numpy", None)):  # PyTorch
        return res.detach().cpu().numpy()
    if isinstance(res, np.generic):
        return np.asarray(res)
    if type(res) is np.ndarray:
        return res
    get = getattr(res, "get", None)
    return np.asarray(get() if callable(get) else res)


def call_gpureduce(op, a, axis, kw, entry):
    if entry == "generic":
        if op in SCAN_OP:
            return gpureduce.scan(SCAN_OP[op], a, axis=axis, **kw)
        return gpureduce.reduce(op, a, axis=axis, **kw)
    return getattr(gpureduce, op)(a, axis=axis, **kw)


def check_call(op, host, arg, axis, kw, *, call_kw=None, out_kind=None, entry="function", exclusive=False,
               cp=None, device=False, what=""):
    """Call gpureduce on `arg` (the host array itself or a device view of the same values) and compare with
    NumPy on `host`.  `kw` are NumPy's arguments; `call_kw` overrides some for gpureduce (a device mask)."""
    what = f"{op} axis={axis!r} {', '.join(f'{k}={v!r}' for k, v in kw.items() if k != 'where')} " \
           f"{'where ' if 'where' in kw else ''}out={out_kind} entry={entry} exclusive={exclusive} {what}"
    gr_kw = {**kw, **(call_kw or {})}
    if exclusive:
        gr_kw["exclusive"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        try:
            expected = np.asarray(numpy_call(op, host, axis, kw))
        except (ValueError, TypeError) as exc:
            with pytest.raises(type(exc)) as ours:
                call_gpureduce(op, arg, axis, gr_kw, entry)
            assert str(ours.value) == str(exc), f"NumPy says {exc!s}; {what}"
            return None
    if exclusive:
        ax = 0 if axis is None else axis
        expected = shift_exclusive(expected, ax, scan_identity(op, expected.dtype))

    out = None
    if out_kind is not None:
        xp = cp if out_kind == "cupy" else np
        out = xp.empty(expected.shape, dtype=expected.dtype)
        poison(xp, out, expected)
        gr_kw["out"] = out
    before = host.tobytes() if arg is host else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = call_gpureduce(op, arg, axis, gr_kw, entry)
    if before is not None:
        assert host.tobytes() == before, f"the input was modified; {what}"

    if out is not None:
        assert res is out, f"out= given but {type(res)} returned; {what}"
    elif expected.ndim == 0 and not device:
        assert isinstance(res, np.generic), f"0-d result is a {type(res)}, not a NumPy scalar; {what}"
    elif device:  # 0-d results too (issue 38)
        want = result_kind(arg)
        assert type(res) is want, f"device input gave a {type(res)}, not a {want}; {what}"
        assert tuple(res.shape) == expected.shape and numpy_dtype(res.dtype) == expected.dtype, what
    else:
        assert type(res) is np.ndarray, f"host input gave a {type(res)}; {what}"
    got = fetch(res)

    if op in EXACT_OPS or expected.dtype.kind in "biu":
        ref = bound = None
    else:
        ref, bound = float_reference(op, host, axis, kw, expected.dtype, exclusive)
    assert_values(got, expected, ref, bound, what)
    return got


@st.composite
def input_params(draw, family, dt, cp, *, min_dims=0, max_dims=4):
    """How to build one input (printed by hypothesis on failure): base shape, view steps, home, data."""
    shape = draw(shapes(min_dims, max_dims))
    p = {"shape": shape, "layout": draw(layouts(len(shape))), "source": draw(st.sampled_from(sources(cp)))}
    p["few"] = family == "minmax" and draw(st.booleans())
    p["specials"] = dt.kind in "fc" and family != "prod" and draw(st.booleans())
    p["scale"] = 1.0
    if family != "prod" and dt.kind in "fc" and dt.name != "float16":
        p["scale"] = draw(st.sampled_from([1.0, 2.0**-60, 2.0**60]))
    p["seed"] = draw(st.integers(0, 2**32 - 1))
    p["byteswap"] = p["source"] == "host" and dt.itemsize > 1 and draw(st.booleans())
    return p


def build_input(p, family, dt, cp, res_dt=None):
    """(host view, argument for gpureduce, device?) with the same values and the same view on both sides:
    the CuPy array is made from the C-contiguous base and viewed on the device, so it is really strided."""
    n = int(np.prod(p["shape"], dtype=np.int64))
    pscale = prod_scale_for([dt] + ([res_dt] if res_dt is not None else []), n)
    base = make_values(family, dt, p["shape"], np.random.default_rng(p["seed"]), few=p["few"],
                       specials=p["specials"], scale=p["scale"], prod_scale=pscale)
    host = apply_layout(np, base, p["layout"])
    if p["source"] == "cupy":
        return host, apply_layout(cp, cp.asarray(base), p["layout"]), True
    if p["byteswap"]:
        host = host.astype(host.dtype.newbyteorder())
    return host, host, False


def draw_input(data, family, dt, cp, res_dt=None):
    return build_input(data.draw(input_params(family, dt, cp), label="input"), family, dt, cp, res_dt)


def draw_common(data, cp):
    out_kind = data.draw(st.sampled_from(out_kinds(cp)), label="out")
    entry = data.draw(st.sampled_from(["function", "generic"]), label="entry")
    return out_kind, entry


# ---------------------------------------------------------------- the properties

@pytest.mark.parametrize("op", REDUCTIONS)
@PROPERTY
@given(data=st.data())
def test_reductions_match_numpy(op, cp, data):
    """sum/prod/min/max/mean: any dtype, layout, axis (tuples too), keepdims, where, initial, dtype=, out=."""
    dt = data.draw(st.sampled_from(DTYPES), label="dtype")
    kw = {}
    if op in ("sum", "prod", "mean"):
        d = data.draw(dtype_params(op, dt), label="dtype=")
        if d is not None:
            kw["dtype"] = d
    res_dt = np.asarray(getattr(np, op)(np.ones(1, dt), **kw)).dtype
    host, arg, device = draw_input(data, FAMILY.get(op, "minmax"), dt, cp, res_dt)
    axis = data.draw(reduction_axes(host.ndim), label="axis")
    if data.draw(st.booleans(), label="keepdims"):
        kw["keepdims"] = True
    call_kw = {}
    if data.draw(st.booleans(), label="where"):
        mshape = data.draw(where_shapes(host.shape), label="where shape")
        p = data.draw(st.sampled_from([0.0, 0.5, 0.9, 1.0]), label="where density")
        mask_rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="mask seed"))
        mask = np.asarray(mask_rng.random(mshape) < p)
        kw["where"] = mask
        if device and data.draw(st.sampled_from(DEVICE_WHERE_KINDS), label="mask home") == "cupy":
            call_kw["where"] = cp.asarray(mask)
    if op != "mean" and data.draw(st.booleans(), label="initial"):
        kw["initial"] = data.draw(initial_values(op, dt, res_dt), label="initial value")
    variant = data.draw(st.sampled_from([None] + FULL_VARIANTS), label="variant")
    if variant is not None:
        call_kw["variant"] = variant
    out_kind, entry = draw_common(data, cp)
    check_call(op, host, arg, axis, kw, call_kw=call_kw, out_kind=out_kind, entry=entry, cp=cp, device=device,
               what=f"input {host.dtype} {host.shape} strides {host.strides} device={device} variant={variant}")
    count_example()  # reached only when every check of the example passed


@pytest.mark.parametrize("op", ARG_REDUCTIONS)
@PROPERTY
@given(data=st.data())
def test_arg_reductions_match_numpy(op, cp, data):
    """argmin/argmax: first occurrence (NaN first of all, complex lexicographic), keepdims, out=."""
    dt = data.draw(st.sampled_from(DTYPES), label="dtype")
    host, arg, device = draw_input(data, "minmax", dt, cp)
    axis = data.draw(single_axes(host.ndim), label="axis")
    kw = {"keepdims": True} if data.draw(st.booleans(), label="keepdims") else {}
    variant = data.draw(st.sampled_from([None] + FULL_VARIANTS), label="variant")
    call_kw = {"variant": variant} if variant is not None else {}
    out_kind, entry = draw_common(data, cp)
    check_call(op, host, arg, axis, kw, call_kw=call_kw, out_kind=out_kind, entry=entry, cp=cp, device=device,
               what=f"input {host.dtype} {host.shape} strides {host.strides} device={device} variant={variant}")
    count_example()  # reached only when every check of the example passed


@pytest.mark.parametrize("op", SCANS)
@PROPERTY
@given(data=st.data())
def test_scans_match_numpy(op, cp, data):
    """cumsum/cumprod/cummax/cummin: axis None (C-order flattening) or one axis, dtype=, out=, exclusive."""
    dt = data.draw(st.sampled_from(DTYPES), label="dtype")
    kw = {}
    if op in ("cumsum", "cumprod"):
        d = data.draw(dtype_params(op, dt), label="dtype=")
        if d is not None:
            kw["dtype"] = d
    res_dt = numpy_call(op, np.ones(1, dt), None, kw).dtype
    host, arg, device = draw_input(data, FAMILY.get(op, "minmax"), dt, cp, res_dt)
    axis = data.draw(single_axes(host.ndim), label="axis")  # a 0-d input scans with axis=None only
    # exclusive=True starts from the identity; complex min/max have none
    exclusive = not (dt.kind == "c" and op in ("cummax", "cummin")) and data.draw(st.booleans(), label="exclusive")
    out_kind, entry = draw_common(data, cp)
    check_call(op, host, arg, axis, kw, out_kind=out_kind, entry=entry, exclusive=exclusive, cp=cp, device=device,
               what=f"input {host.dtype} {host.shape} strides {host.strides} device={device}")
    count_example()  # reached only when every check of the example passed


@pytest.mark.skipif(not TEACHING, reason="no teaching variants registered")
@PROPERTY
@given(data=st.data())
def test_teaching_variants_whole_array(cp, data):
    """The classic variants reduce a whole array of one of their dtypes like NumPy: C or Fortran order, host
    or device, byte-swapped host; a strided view either works or is refused naming auto and cub."""
    v = data.draw(st.sampled_from(TEACHING), label="variant")
    op = data.draw(st.sampled_from([o for o in ("sum", "prod", "min", "max") if o in v.ops]), label="op")
    dt = np.dtype(data.draw(st.sampled_from(sorted(v.dtypes)), label="dtype"))
    host, arg, device = draw_input(data, FAMILY.get(op, "minmax"), dt, cp)
    axis = None
    if host.ndim == 1:
        axis = data.draw(st.sampled_from([None, 0, -1]), label="axis")
    entry = data.draw(st.sampled_from(["function", "generic"]), label="entry")
    what = f"variant {v.name} input {host.dtype} {host.shape} strides {host.strides} device={device}"
    if host.flags.c_contiguous or host.flags.f_contiguous:
        check_call(op, host, arg, axis, {}, call_kw={"variant": v.name}, entry=entry, cp=cp, device=device, what=what)
    else:
        try:  # a strided view: a teaching variant may reduce it (correctly) or refuse it, naming the able ones
            check_call(op, host, arg, axis, {}, call_kw={"variant": v.name}, entry=entry, cp=cp, device=device,
                       what=what)
        except ValueError as e:
            for able in FULL_VARIANTS:
                assert able in str(e), f"{able!r} not named in the refusal {e}; {what}"
    count_example()  # reached only when every check of the example passed


# ---------------------------------------------------------------- large arrays, every axis

LARGE_SHAPES = [(2**20, 2), (2, 2**20), (1024, 1025)]
ALL_OPS = REDUCTIONS + ARG_REDUCTIONS + SCANS


def _large_cases():
    for shape in LARGE_SHAPES:
        for layout in ("C", "T"):
            for dtype in ("float32", "int32"):
                for op in ALL_OPS:
                    axes = [None, 0, 1, -1] + ([(0, 1)] if op in REDUCTIONS else [])
                    for axis in axes:
                        yield pytest.param(shape, layout, dtype, op, axis,
                                           id=f"{shape[0]}x{shape[1]}-{layout}-{dtype}-{op}-axis{axis}")


_large = {}


def large_input(shape, layout, dtype, family, cp):
    key = (shape, layout, dtype, family)
    if key not in _large:
        if len(_large) > 8:
            _large.clear()
        dt = np.dtype(dtype)
        seed = int(np.random.SeedSequence().entropy % 2**32)  # fresh data every session
        n = shape[0] * shape[1]
        base = make_values(family, dt, shape, np.random.default_rng(seed), prod_scale=prod_scale_for([dt], n))
        steps = [("T", (1, 0))] if layout == "T" else []
        host = apply_layout(np, base, steps)
        dev = apply_layout(cp, cp.asarray(base), steps) if cp is not None else host
        _large[key] = (host, dev, seed)
    return _large[key]


@pytest.mark.parametrize("shape, layout, dtype, op, axis", list(_large_cases()))
def test_large_arrays_every_axis(shape, layout, dtype, op, axis, cp):
    """>= 2**20 elements: long and short rows and columns, C order and transposed, device inputs."""
    host, dev, seed = large_input(shape, layout, dtype, FAMILY.get(op, "minmax"), cp)
    check_call(op, host, dev, axis, {}, cp=cp, device=dev is not host,
               what=f"input {host.dtype} {host.shape} strides {host.strides} data seed {seed}")


@pytest.mark.parametrize("source", ["host", "cupy"])
@pytest.mark.parametrize("axis", [None, 0, 1])
@pytest.mark.parametrize("shape", LARGE_SHAPES)
def test_large_float32_row_and_column_sums(shape, axis, source, cp, rng):
    """The classic case: float32 row and column sums of big arrays, within the float64-reference bound."""
    if source == "cupy" and cp is None:
        pytest.skip("needs CuPy")
    host = rng.uniform(-1, 1, shape).astype(np.float32)
    arg = cp.asarray(host) if source == "cupy" else host
    check_call("sum", host, arg, axis, {}, cp=cp, device=source == "cupy")
    check_call("mean", host, arg, axis, {}, cp=cp, device=source == "cupy")


# ---------------------------------------------------------------- regressions and classic cases

F16_ONES = np.ones(524282, np.float16)
REGRESSIONS = [
    # seed 004: a float16 sum came out 28.0 instead of 524282 (a float16 accumulator stalls at 2048)
    pytest.param("sum", lambda: F16_ONES, {"dtype": np.float32}, np.float32(524282.0), id="f16-ones-sum-dtype-f32"),
    pytest.param("mean", lambda: F16_ONES, {}, np.float16(1.0), id="f16-ones-mean"),
    pytest.param("cumsum", lambda: F16_ONES[:60000], {"dtype": np.float32}, None, id="f16-ones-cumsum-dtype-f32"),
    pytest.param("sum", lambda: np.ones(30001, np.float16), {}, np.float16(30000.0), id="f16-ones-sum-rounds-once"),
    pytest.param("sum", lambda: np.full(10000, 0.1, np.float16), {}, np.float16(1000.0), id="f16-tenths-sum"),
    # NumPy itself gives 2048 here (float16 accumulation along a strided axis); float32 accumulation is exact
    pytest.param("sum", lambda: np.ones((4096, 3), np.float16), {"axis": 0}, np.full(3, 4096.0, np.float16),
                 id="f16-ones-column-sum"),
    pytest.param("mean", lambda: np.ones((3, 524282), np.float16).T, {"axis": 0}, np.ones(3, np.float16),
                 id="f16-ones-mean-strided-axis"),
    # integer promotion and wrap-around
    pytest.param("sum", lambda: np.full(1000, 100, np.int8), {}, np.int64(100000), id="int8-sum-int64"),
    pytest.param("sum", lambda: np.full(1000, 100, np.int8), {"dtype": np.int8}, np.int8(-96), id="int8-sum-wraps"),
    pytest.param("cumsum", lambda: np.full(1000, 100, np.int8), {"dtype": np.int8}, None, id="int8-cumsum-wraps"),
    pytest.param("sum", lambda: np.full(10, 2**32 - 1, np.uint32), {}, np.uint64(10 * (2**32 - 1)),
                 id="uint32-sum-uint64"),
    pytest.param("sum", lambda: np.full(3, 2**63, np.uint64), {}, np.uint64(2**63), id="uint64-sum-wraps"),
    pytest.param("sum", lambda: np.full(4, 2**62, np.int64), {}, np.int64(0), id="int64-sum-wraps"),
    pytest.param("prod", lambda: np.full(20, 3, np.int8), {}, np.int64(3**20), id="int8-prod-int64"),
    pytest.param("prod", lambda: np.full(25, 3, np.int32), {"dtype": np.int32}, None, id="int32-prod-wraps"),
    pytest.param("sum", lambda: np.arange(1000) % 3 == 0, {}, np.int64(334), id="bool-sum-int64"),
    pytest.param("prod", lambda: np.ones(7, bool), {}, np.int64(1), id="bool-prod-int64"),
    pytest.param("mean", lambda: np.arange(4) % 2 == 0, {}, np.float64(0.5), id="bool-mean-float64"),
    pytest.param("cumsum", lambda: np.arange(1000) % 3 == 0, {}, None, id="bool-cumsum-int64"),
    pytest.param("mean", lambda: np.full(3, 2**62, np.int64), {}, np.float64(2.0**62), id="int64-mean-no-wrap"),
    # complex
    pytest.param("sum", lambda: np.full(1000, 1 + 2j, np.complex64), {}, np.complex64(1000 + 2000j), id="c64-sum"),
    pytest.param("sum", lambda: np.random.default_rng(7).uniform(-1, 1, (300, 7)).astype(np.complex128) * (1 - 2j),
                 {"axis": 0}, None, id="c128-column-sum"),
    pytest.param("prod", lambda: np.full(4, 1j, np.complex64), {}, np.complex64(1), id="c64-prod"),
    pytest.param("argmin", lambda: np.array([1 + 2j, 1 + 1j, 0 + 5j, 0 + 5j]), {}, np.intp(2), id="complex-argmin-lex"),
    pytest.param("argmax", lambda: np.array([1 + 2j, 1 + 1j, 0 + 5j, 1 + 2j]), {}, np.intp(0), id="complex-argmax-lex"),
    # NaN
    pytest.param("argmax", lambda: np.array([1, np.nan, 3, np.nan]), {}, np.intp(1), id="argmax-first-nan"),
    pytest.param("argmin", lambda: np.array([1, np.nan, 3, np.nan], np.float32), {}, np.intp(1), id="argmin-first-nan"),
    pytest.param("max", lambda: np.array([1, np.nan, 3], np.float16), {}, None, id="max-nan"),
    pytest.param("argmax", lambda: np.array([[0.0, np.nan], [5.0, 1.0]]), {"axis": 0}, np.array([1, 0], np.intp),
                 id="argmax-nan-axis0"),
    pytest.param("cummax", lambda: np.array([1, 3, np.nan, 7, 2]), {}, None, id="cummax-nan"),
    # empty inputs: the identity, in NumPy's dtype
    pytest.param("sum", lambda: np.zeros(0, np.int8), {}, np.int64(0), id="empty-int8-sum"),
    pytest.param("prod", lambda: np.zeros(0, np.float16), {}, np.float16(1), id="empty-f16-prod"),
    pytest.param("sum", lambda: np.zeros(0, np.complex64), {}, np.complex64(0), id="empty-c64-sum"),
    pytest.param("sum", lambda: np.zeros((0, 3), np.float32), {"axis": 0}, np.zeros(3, np.float32),
                 id="empty-axis-sum"),
    pytest.param("prod", lambda: np.zeros((3, 0), np.uint16), {"axis": 1}, np.ones(3, np.uint64), id="empty-axis-prod"),
    pytest.param("cumsum", lambda: np.zeros((0, 4), np.int32), {"axis": 1}, None, id="empty-cumsum"),
    pytest.param("min", lambda: np.zeros(0, np.float32), {"initial": 5.0}, np.float32(5), id="empty-min-initial"),
    # 0-d and Python inputs
    pytest.param("sum", lambda: np.array(2.5, np.float32), {}, np.float32(2.5), id="0d-sum"),
    pytest.param("argmax", lambda: np.array(2.5), {}, np.intp(0), id="0d-argmax"),
    pytest.param("cumsum", lambda: np.array(2.5), {}, np.array([2.5]), id="0d-cumsum"),
    pytest.param("sum", lambda: [1, 2, 3], {}, np.int64(6), id="list-sum"),
    pytest.param("max", lambda: 5.0, {}, np.float64(5.0), id="python-scalar-max"),
    # where / initial / keepdims
    pytest.param("sum", lambda: np.arange(12.0).reshape(3, 4),
                 {"axis": 1, "where": np.array([True, False, True, False])}, np.array([2.0, 10.0, 18.0]),
                 id="sum-where-broadcast"),
    pytest.param("max", lambda: np.arange(12).reshape(3, 4),
                 {"axis": 0, "where": np.array([[True], [False], [True]]), "initial": -1}, np.array([8, 9, 10, 11]),
                 id="max-where-initial"),
    pytest.param("mean", lambda: np.arange(12.0).reshape(3, 4), {"axis": 0, "keepdims": True},
                 np.array([[4.0, 5.0, 6.0, 7.0]]), id="mean-keepdims"),
]


@pytest.mark.parametrize("source", ["host", "cupy"])
@pytest.mark.parametrize("op, make, kw, want", REGRESSIONS)
def test_classic_cases(op, make, kw, want, source, cp):
    x = make()
    if source == "cupy":
        if cp is None or not isinstance(x, np.ndarray):
            pytest.skip("a CuPy case needs CuPy and an ndarray input")
        arg = cp.asarray(x)
        call_kw = {"where": cp.asarray(kw["where"])} if "where" in kw else None
    else:
        arg, call_kw = x, None
    kw = dict(kw)
    axis = kw.pop("axis", None)
    host = np.asarray(x)
    got = check_call(op, host, arg, axis, kw, call_kw=call_kw, cp=cp, device=source == "cupy")
    if want is not None:
        want = np.asarray(want)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want, strict=True)


# ---------------------------------------------------------------- float16: accumulated in float32, held to that

# The variants that take float16 (the axis machinery's: float16 is no flat kernel's dtype), per kind
FLOAT16_VARIANTS = {kind: [v.name for v in gpureduce.variants(kind=kind)
                           if "float16" in v.dtypes or "axes" in v.properties] for kind in ("reduce", "scan")}
assert all(FLOAT16_VARIANTS.values()), f"no variant takes float16: {FLOAT16_VARIANTS}"


def float16_exact_data(op, rng):
    """float16 values whose every partial sum (product) is exact in float16, in any order, so the result is known
    exactly.  Sums: 300 nonzero integers in [-3, 3] and 1000 ones, shuffled (partial sums are integers in
    [-900, 1900]; float16 holds every integer up to 2048).  Products: 300 factors +-1, five 2s and two 0.5s among
    them, one of those last (every partial product is +-2**e with |e| <= 5).  No element is 0, so a dropped or
    doubled element changes a sum; a dropped last factor changes the product by a factor 2 or 0.5."""
    if op in ("sum", "cumsum"):
        small = rng.integers(1, 3, 300, endpoint=True) * rng.choice([-1, 1], 300)
        x = np.concatenate([small, np.ones(1000, np.int64)]).astype(np.float64)
        rng.shuffle(x)
    else:
        x = rng.choice([-1.0, 1.0], 300)
        where = np.concatenate([rng.choice(299, 6, replace=False), [299]])
        x[where] *= rng.permutation([2, 2, 2, 2, 2, 0.5, 0.5])
    return x.astype(np.float16)


@pytest.mark.parametrize("source", ["host", "cupy"])
@pytest.mark.parametrize("op, variant", [(op, v) for op in ("sum", "prod") for v in FLOAT16_VARIANTS["reduce"]
                                          if v in {w.name for w in gpureduce.variants(kind="reduce", op=op)}]
                         + [(op, v) for op in ("cumsum", "cumprod") for v in FLOAT16_VARIANTS["scan"]
                            if v in {w.name for w in gpureduce.variants(kind="scan", op=op[3:])}])
def test_float16_exact_data_gives_the_exact_value(op, variant, source, cp, rng):
    """A float16 sum / product / scan of exactly representable data equals the exact value, bitwise (the float64
    result cast to float16): a float16 sum that returns 0, a dropped or doubled element, or a product a factor
    off fails, whatever error_bound allows."""
    x = float16_exact_data(op, rng)
    want = np.asarray(getattr(np, op)(x.astype(np.float64))).astype(np.float16)  # exact: no rounding anywhere
    assert (np.asarray(getattr(np, op)(x)) == want).all(), "the data is not exact in float16 (test bug)"
    if source == "cupy" and cp is None:
        pytest.skip("needs CuPy")
    arg = cp.asarray(x) if source == "cupy" else x
    got = fetch(getattr(gpureduce, op)(arg, variant=variant))
    assert got.dtype == np.float16 and got.shape == want.shape, f"{got.dtype} {got.shape}"
    bad = np.flatnonzero(got.view(np.uint16) != want.view(np.uint16))
    assert bad.size == 0, (f"{op} variant={variant} {source}: {bad.size} of {want.size} values differ; first at "
                           f"{bad[0]}: got {got.ravel()[bad[0]]!r}, exact {want.ravel()[bad[0]]!r}")


def test_float16_bounds_reject_gross_errors(rng):
    """The comparison of these tests (float_reference + assert_values: gpureduce.testing.error_bound, with no
    rtol or atol of its own) holds float16 results to float32 accumulation plus the final float16 rounding: a
    float16 sum returning 0, or a product of 300 factors off by 1%, fails; the exact values pass."""
    f16 = np.dtype(np.float16)
    x = float16_exact_data("sum", rng)
    exact = np.asarray(np.float16(x.astype(np.float64).sum()))
    ref, bound = float_reference("sum", x, None, {}, f16)
    assert float(bound) < 2.0, f"float16 sum bound {float(bound)} for |sum| {float(exact)} (float16 accumulation: ~150)"
    assert_values(exact, exact, ref, bound, "the exact float16 sum")
    with pytest.raises(pytest.fail.Exception):
        assert_values(np.asarray(np.float16(0)), exact, ref, bound, "a float16 sum returning 0")
    f = (rng.choice([-1.0, 1.0], 300) * np.exp2(rng.uniform(-0.05, 0.05, 300))).astype(np.float16)
    p = np.prod(f.astype(np.float64))
    ref, bound = float_reference("prod", f, None, {}, f16)
    assert float(bound) < 0.002 * abs(p), f"float16 product bound {float(bound)} for |prod| {abs(p)}"
    assert_values(np.asarray(np.float16(p)), np.asarray(np.float16(p)), ref, bound, "the float16 product")
    with pytest.raises(pytest.fail.Exception):
        assert_values(np.asarray(np.float16(p * 1.01)), np.asarray(np.float16(p)), ref, bound, "a product 1% off")
    # scans: every element held alike
    c = np.cumsum(x.astype(np.float64))
    ref, bound = float_reference("cumsum", x, None, {}, f16)
    wrong = c.astype(np.float16)
    wrong[-1] = 0
    with pytest.raises(pytest.fail.Exception):
        assert_values(wrong, c.astype(np.float16), ref, bound, "a float16 cumsum ending in 0")


@pytest.mark.parametrize("source", ["host", "cupy"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool", "complex64"])
def test_mean_of_empty_warns_and_is_nan(dtype, source, cp):
    if source == "cupy" and cp is None:
        pytest.skip("needs CuPy")
    x = np.zeros(0, dtype)
    arg = cp.asarray(x) if source == "cupy" else x
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.mean(x)
    with pytest.warns(RuntimeWarning, match="Mean of empty slice"):
        got = gpureduce.mean(arg)
    if source == "cupy":  # a device input's 0-d result is a 0-d array of its kind (issue 38)
        assert isinstance(got, cp.ndarray) and got.shape == ()
        got = got.get()[()]
    assert isinstance(got, np.generic) and got.dtype == expected.dtype and np.isnan(got)
    # along an axis of length 0: every element is nan, NumPy warns too
    x2 = np.zeros((0, 3), dtype)
    arg2 = cp.asarray(x2) if source == "cupy" else x2
    with pytest.warns(RuntimeWarning):
        got2 = fetch(gpureduce.mean(arg2, axis=0))
    assert got2.shape == (3,) and got2.dtype == np.mean(np.ones((1, 3), dtype), axis=0).dtype
    assert np.isnan(got2).all()


# ---------------------------------------------------------------- other device libraries

def _views(library):
    """name -> function(device array) -> a view with a different layout, per library."""
    views = {"contiguous": lambda d: d, "columns-stepped": lambda d: d[:, ::2]}
    if library == "torch":
        views["transposed"] = lambda d: d.T
    return views


LIBRARY_DTYPES = ["bool", "int8", "int16", "int32", "int64", "uint8", "float16", "float32", "float64",
                  "complex64", "complex128"]


@pytest.mark.parametrize("view", ["contiguous", "columns-stepped", "transposed"])
@pytest.mark.parametrize("dtype", LIBRARY_DTYPES)
@pytest.mark.parametrize("library", ["torch", "numba"])
def test_other_device_libraries(library, dtype, view, rng):
    """torch cuda tensors and numba device arrays, contiguous or viewed, every op along each axis."""
    views = _views(library)
    if view not in views:
        pytest.skip(f"{library} has no such view")
    dt = np.dtype(dtype)
    for op in ALL_OPS:
        base = make_values(FAMILY.get(op, "minmax"), dt, (65, 130), rng, prod_scale=prod_scale_for([dt], 65 * 130))
        dev = views[view](DEVICE_LIBRARIES[library](base))
        host = views[view](base) if view != "transposed" else base.T
        for axis in (None, 0, 1):
            check_call(op, host, dev, axis, {}, device=True, what=f"{library} {view} {dtype}")


def test_regressions_found_by_the_properties(cp):
    """Cases hypothesis found on the H200, kept as fixed examples."""
    # argmax along rows of a reversed view: the second row starts at a negative offset
    host = np.random.default_rng(0).standard_normal((1, 2, 2))
    dev = cp.asarray(host)[:, ::-1]
    np.testing.assert_array_equal(np.asarray(gpureduce.argmax(dev, axis=-1).get()), np.argmax(host[:, ::-1], axis=-1))
    # a reduction over an empty axis of a strided view: every result is the identity
    empty = np.zeros((2, 4, 2, 0), bool)[:, ::3]
    got = gpureduce.prod(empty, axis=-1)
    assert got.dtype == np.prod(empty, axis=-1).dtype
    np.testing.assert_array_equal(got, np.prod(empty, axis=-1))
    # complex cummax: a NaN in the imaginary part propagates
    c = np.array([1 + 0j, 2 - 2j, complex(1, np.nan), 3 + 0j], np.complex64)
    np.testing.assert_array_equal(gpureduce.cummax(c), np.maximum.accumulate(c))
