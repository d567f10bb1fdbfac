"""gpureduce.benchmark(): the seeds' tables (time, GB/s, % of the hardware's limit, error, speed-ups)
measured on the GPU at hand, for a terminal, a notebook, a CSV file or a plot.

Method (DESIGN.md section 6): our variants are timed inside the extension with CUDA events around each
call and the L2 flushed before each one (cold cache), after warm-up calls; the figure is the median.
Peers (CuPy, PyTorch), where installed, are timed the same way (_core.time_calls) on views of the same
device arrays in the same run; NumPy on the host with a wall clock.  GB/s counts the bytes that must move:
the input for a reduction, input and output for a scan.  "% ceiling" compares with a plain vectorised read
(reductions) or a device-to-device copy (scans) of the same bytes, timed the same way at the same size.
Only NumPy is needed: inputs live in gpureduce.DeviceArrays, results are checked on the host, outside the
timed calls: each element of a floating sum or product within its own bound (gpureduce.testing.error_bound),
results on exact-valued data equal to NumPy's, scans written into a poisoned out= (_judge, _check_variant).
"""
from __future__ import annotations

import csv
import functools
import importlib
import io
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass

import numpy as np

from . import _core, reductions, scans
from ._bounds import error_bound, exact_call, exact_result, rounding_chain_of, same_exact_result
from ._planning.operands import dtype_kind, finfo, to_host
from ._planning.plan import reduce_plan, scan_plan
from ._registry import ALL, DTYPE_NAMES, OPERATORS as _OPS, did_you_mean, variants as _variants

__all__ = ["benchmark", "BenchmarkResult", "BenchmarkRow", "device_info", "parse_sizes", "series_styles", "PEERS"]

# Public function names -> (kind, gr operator): the operators the whole-array variants implement (cuda/abi/ops.def's
# `flat` column) and their scans
OPERATORS = {**{op.name: ("reduce", op.name) for op in _OPS if op.flat},
             **{"cum" + op.name: ("scan", op.name) for op in _OPS if op.flat and op.scans}}
DEFAULT_SIZES = tuple(2**k for k in range(10, 25, 2))
SLOW_CALL_S = 0.05  # a call slower than this is timed only a few times (e.g. the one-thread scan)


@dataclass
class BenchmarkRow:
    """One measured line of a table."""

    variant: str
    op: str
    n: int
    dtype: str
    median_us: float
    min_us: float
    max_us: float
    gbps: float
    pct_ceiling: float | None
    speedup_step: float | None = None    # over the previous row of the same n (Harris's "step")
    speedup_total: float | None = None   # over the first row of the same n (Harris's "cumulative")
    rel_error: float | None = None       # worst element's |result - float64 reference| / its error bound
    correct: bool | None = None          # rel_error <= 1: every checked result right (_judge, _check_variant)
    deterministic: bool | None = None    # two more calls gave bitwise the same result
    repeats: int = 0
    peer: bool = False                   # a library measured beside ours (cupy, torch, numpy)


# ----------------------------------------------------------------------------- device facts

_DEVICE_INFO = {}


def device_info(remeasure: bool = False) -> dict:
    """The current CUDA device and its measured bandwidth ceilings.

    Parameters
    ----------
    remeasure : bool, optional
        Measure the ceilings again instead of returning the figures of the first call on this device.

    Returns
    -------
    dict
        ``device`` (ordinal), ``name``, ``pci_bus_id`` (as nvidia-smi writes it: which GPU of the machine this
        is, whatever ``CUDA_VISIBLE_DEVICES`` numbers it), ``compute_capability`` (major, minor), ``sm_count``,
        ``l2_bytes``, ``memory_bytes``, and the ceilings the benchmark's "% ceiling" column compares with:
        ``read_gbps`` (a vectorised read of 1 GiB) and ``copy_gbps`` (a 1 GiB device-to-device copy, read +
        write bytes), both timed with CUDA events, cold L2, median of 10; and the ceiling of host-array calls:
        ``h2d_gbps`` and ``d2h_gbps`` (a 256 MiB copy from pinned host memory to the device and back, bytes
        over time, median of 10 the same way).

    Raises
    ------
    gpureduce.CudaError
        There is no CUDA device; the message says why (no driver, a driver too old, no GPU visible).

    See Also
    --------
    benchmark : The tables these ceilings are the 100% of.

    Notes
    -----
    Needs only NumPy: the 1 GiB and 256 MiB buffers are gpureduce.DeviceArrays.
    """
    props = _core.device_properties()
    if props["device"] in _DEVICE_INFO and not remeasure:
        return dict(_DEVICE_INFO[props["device"]])
    buf = _core.empty((2**28,), np.float32, 0)  # 1 GiB of zeros
    read_us = statistics.median(_core.time_ceiling("read", buf, 10, 2))
    copy_us = statistics.median(_core.time_ceiling("copy", buf, 10, 2))
    info = dict(props, read_gbps=buf.nbytes / read_us / 1e3, copy_gbps=2 * buf.nbytes / copy_us / 1e3)
    del buf
    # the host path's ceiling: big enough for the DMA's full rate, small enough to page-lock quickly
    buf = _core.empty((2**26,), np.float32, 0)  # 256 MiB
    for way in ("h2d", "d2h"):
        info[f"{way}_gbps"] = buf.nbytes / statistics.median(_core.time_ceiling(way, buf, 10, 2)) / 1e3
    del buf
    _DEVICE_INFO[props["device"]] = info
    return dict(info)


# ----------------------------------------------------------------------------- arguments

def parse_sizes(text: str):
    """'2^10:2^28' (every power of two, both ends included), '2^10:2^28:2' (every other one),
    '1000,2^20+3' (a list); ** works as ^."""
    def value(t):
        t = t.strip().replace("^", "**")
        if not all(c in "0123456789*+- " for c in t):
            raise ValueError(f"size {t!r}: expected an integer expression such as 2^20 or 2^20+3")
        return int(eval(t, {"__builtins__": {}}))  # digits and + - * only (checked above)

    if ":" in text:
        parts = text.split(":")
        lo, hi = value(parts[0]), value(parts[1])
        step = int(parts[2]) if len(parts) > 2 else 1
        if lo <= 0 or hi < lo or lo & (lo - 1) or hi & (hi - 1):
            raise ValueError(f"sizes {text!r}: a range runs between two powers of two, low to high")
        return [2**k for k in range(int(math.log2(lo)), int(math.log2(hi)) + 1, step)]
    return [value(t) for t in text.split(",")]


def _validate(op, names, sizes, dtype, repeat):
    if op not in OPERATORS:
        raise ValueError(f"unknown op {op!r}{did_you_mean(str(op), OPERATORS)}; benchmarkable ops are "
                         f"{', '.join(OPERATORS)}")
    kind, gr_op = OPERATORS[op]
    registered = [v for v in _variants(kind=kind, op=gr_op)]
    if not registered:
        raise ValueError(f"no {kind} variants are registered in this build")
    by_name = {v.name: v for v in registered}
    if names == "all":
        chosen = registered
    else:
        names = [names] if isinstance(names, str) else list(names)
        unknown = [n for n in names if n not in by_name]
        if unknown:
            hint = did_you_mean(unknown[0], by_name) if len(unknown) == 1 and isinstance(unknown[0], str) else ""
            raise ValueError(f"unknown {kind} variant(s) {', '.join(map(repr, unknown))}{hint}; "
                             f"valid: {', '.join(by_name)}")
        chosen = [by_name[n] for n in names]
        if "cub" in by_name and "cub" not in names:
            chosen.append(by_name["cub"])  # the baseline is always measured
    try:
        dtype = np.dtype(dtype).name
    except TypeError:
        raise ValueError(f"unknown dtype {dtype!r}; gpureduce knows {', '.join(DTYPE_NAMES)}") from None
    if dtype not in DTYPE_NAMES:
        raise ValueError(f"unknown dtype {dtype!r}; gpureduce knows {', '.join(DTYPE_NAMES)}")
    unsupported = [v.name for v in chosen if dtype not in v.dtypes]
    if unsupported:
        raise ValueError(f"dtype {dtype} is not supported by {', '.join(unsupported)}")
    if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
        raise ValueError(f"repeat must be a positive int, got {repeat!r}")
    sizes = list(sizes)
    if not sizes or any(not isinstance(n, (int, np.integer)) or n < 1 for n in sizes):
        raise ValueError(f"sizes must be positive ints, got {sizes!r}")
    return kind, gr_op, chosen, dtype, sorted(int(n) for n in sizes)


def _check_memory(sizes, dtype, kind):
    free, _total = _core.memory_info()  # also the clear CudaError where there is no device
    item = np.dtype(dtype).itemsize
    out_item = 8 if kind == "scan" else 0  # the widest result element
    # the timing input, the exact-valued check input, one output; flush buffer and workspace
    need = max(sizes) * (2 * item + out_item) + (256 << 20)
    if need > free:
        raise ValueError(f"n={max(sizes):,} {dtype} needs about {need:,} bytes of device memory; {free:,} are free")


# ----------------------------------------------------------------------------- measuring

def _random(n, dtype, gr_op, rng):
    dt = np.dtype(dtype)
    if dtype_kind(dt) == "f":
        if gr_op == "prod":
            return (1 + rng.uniform(-2.0**-12, 2.0**-12, n)).astype(dt)
        return rng.uniform(-1, 1, n).astype(dt)
    if gr_op == "prod":
        return rng.choice(np.array([-1, 1, 3], dtype=dt), n)
    return rng.integers(-1000, 1000, n, dtype=dt)


def _time_ours(kind, v, gr_op, dev, repeat, warmup):
    """The variant's device times over `dev`: the plan its call makes (whole arrays: the variant's flat kernel)."""
    plan = (reduce_plan if kind == "reduce" else scan_plan)(gr_op, dev, variant=v.name)
    probe, _ = _core.time_device(plan, 1, 1)
    if probe[0] * 1e-6 > SLOW_CALL_S:  # the one-thread scan and friends: a few calls are plenty
        repeat, warmup = min(repeat, 3), 0
    return _core.time_device(plan, repeat, warmup), repeat


def _run_once(kind, v, gr_op, dev, poison=None):
    """The variant's result on the host (a NumPy scalar or array) for the error and determinism columns.

    `poison` = (result dtype, fill byte): a scan writes into a new device array of that dtype whose every byte
    is the fill byte (NaN for floats, a sentinel for integers: _poison_byte), passed as out=, so that an
    element the variant leaves unwritten keeps the poison instead of whatever the memory pool hands back (the
    previous variant's correct answer).  Every variant takes such an out= (the classic ones run their flat
    kernel into a contiguous device out= of NumPy's result dtype, src/run.c).  A reduction's scalar cannot be
    poisoned that way (a classic variant's result goes through the runner's result slot, then into out=);
    _check_variant catches a stale one by the order of its calls instead."""
    if kind == "reduce":
        return reductions.reduce(gr_op, dev, variant=v.name)
    out = None if poison is None else _core.empty((dev.size,), poison[0], poison[1])
    return to_host(scans.scan(gr_op, dev, out=out, variant=v.name))


def _host_timer(fn, repeat, warmup, budget_s=2.0):
    times, spent = [], 0.0
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        spent += dt
        if i >= warmup:
            times.append(dt * 1e6)
        if spent > budget_s and times:
            break
    return times


# ----------------------------------------------------------------------------- checking results
#
# Each row's `correct` says that three checked calls of the variant, made after its timed calls, all gave
# NumPy's answer (_check_variant): two on the timing data (their results also fill `deterministic`), one in
# between on exact-valued data.  A scan writes each checked result into a freshly poisoned out=.  _judge
# says what NumPy's answer means.

# NumPy's function of each benchmarkable op (the reference, and the numpy peer)
_NUMPY_OPS = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "cumsum": np.cumsum,
              "cumprod": np.cumprod, "cummax": np.maximum.accumulate, "cummin": np.minimum.accumulate}
_BOUNDED = ("sum", "prod", "cumsum", "cumprod")  # rounding, hence a bound, for floating results
# A checked scan's out= is filled with the first of these bytes whose value is no element of the answer
_FLOAT_POISON = (0xFF, 0xA5, 0x5A, 0x69)  # 0xFF...: NaN in every floating dtype
_INT_POISON = (0xA5, 0x5A, 0x69, 0x96)  # 0xA5...: far from any small sum, of both signs, odd and even


@functools.lru_cache(maxsize=None)
def _result_dtype(op, dtype):
    """NumPy's result dtype of `op` over `dtype` (gpureduce's, by NumPy parity)."""
    return np.asarray(_NUMPY_OPS[op](np.zeros(1, dtype))).dtype


def _bounded(op, result_dtype):
    return op in _BOUNDED and dtype_kind(np.dtype(result_dtype)) in "fc"


def _reference(host, kind, gr_op):
    """float64 (complex128) reference of a floating sum or product: NumPy on the upcast input."""
    x = host.astype(np.complex128 if host.dtype.kind == "c" else np.float64) if dtype_kind(host.dtype) in "fc" \
        else host.astype(np.int64)
    if kind == "reduce":
        return getattr(np, gr_op)(x)
    return {"sum": np.cumsum, "prod": np.cumprod, "min": np.minimum.accumulate, "max": np.maximum.accumulate}[gr_op](x)


def _bitwise_equal(a, b):
    """Same dtype, shape and bits (NaNs included), compared as unsigned words without a copy."""
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    word = np.dtype(f"u{math.gcd(a.itemsize, 8)}")
    return bool(np.array_equal(a.reshape(-1).view(word), b.reshape(-1).view(word)))


def _bounds(op, x, result_dtype, reference, names):
    """{variant: gpureduce.testing.error_bound(op, x, result_dtype, variant=..., reference=...)}: the bound per
    output element.  Variants whose longest rounding chain over `x` is as long (Variant.rounding_chain) share
    one bound: it is computed once per chain length, not once per variant (it costs a second per 2**24)."""

    kind = OPERATORS[op][0]
    by_chain, bounds = {}, {}
    for name in dict.fromkeys(names):
        key = rounding_chain_of(kind, name, op, x, np.dtype(result_dtype), None, None, True, x.size)
        if key not in by_chain:
            by_chain[key] = error_bound(op, x, result_dtype, variant=name, reference=reference)
        bounds[name] = by_chain[key]
    return bounds


def _worst(*errors):
    """The largest error, NaN if any is NaN."""
    return math.nan if any(math.isnan(e) for e in errors) else max(errors)


def _exact_error(got, expected, chunk):
    """0.0 where every element equals (NaN matching NaN), NaN where `got` has a NaN `expected` has not (an
    element left poisoned), else inf; in chunks."""
    worst = 0.0
    for i in range(0, expected.size, chunk):
        g, e = got[i:i + chunk], expected[i:i + chunk]
        if np.array_equal(g, e):  # the common case: one pass
            continue
        same = g == e
        if dtype_kind(g.dtype) in "fc":
            g_nan = np.isnan(g)
            e_nan = np.isnan(e) if dtype_kind(e.dtype) in "fc" else np.zeros_like(g_nan)
            if np.any(g_nan & ~e_nan):
                return math.nan
            same |= g_nan & e_nan
        if not same.all():
            worst = math.inf
    return worst


def _bounded_error(got, reference, bound, chunk):
    """max over elements of |got - reference| / bound, in float64 (complex128) and in chunks (a 2^28-element
    scan needs no 2 GiB temporaries); NaN where `got` has a NaN the reference has not; where the reference is
    not finite, `got` must be the same (0.0) or the error is inf."""
    wide = np.complex128 if "c" in (got.dtype.kind, reference.dtype.kind) else np.float64
    bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), reference.shape).reshape(-1)
    worst = 0.0
    for i in range(0, reference.size, chunk):
        g = got[i:i + chunk].astype(wide)
        r = reference[i:i + chunk].astype(wide, copy=False)
        b = bound[i:i + chunk]
        with np.errstate(all="ignore"):
            np.subtract(g, r, out=g)
            ratio = np.abs(g, out=g) if wide is np.float64 else np.abs(g)
            np.divide(ratio, b, out=ratio)
            d = float(np.max(ratio))
            if not math.isfinite(d):  # NaN or inf somewhere: look closer (a non-finite reference may agree)
                g = got[i:i + chunk].astype(wide)
                same = (g == r) | (np.isnan(g) & np.isnan(r))
                d = float(np.max(np.where(np.isfinite(r), ratio, np.where(same, 0.0, np.inf))))
        if math.isnan(d):
            return math.nan  # fails `err <= 1`, as it must
        worst = max(worst, d)
    return worst


def _judge(op, x, got, variant, exact=False, reference=None, bound=None, chunk=1 << 22):
    """(error, correct) of `got`, variant `variant`'s result of `op` (a public name: "sum", "cumsum", ...) over
    the host input `x`.

    The result must have NumPy's dtype and shape (else the error is inf).  Then, per element:

    * a floating sum or product (sum, prod, cumsum, cumprod) of ordinary data lies within its own bound,
      ``gpureduce.testing.error_bound(op, x, dtype, variant=variant)`` (for a scan: proportional to the
      cumulative sum of |x| up to that element, not the whole array's), of the float64 reference; the error is
      the worst element's |got - reference| / bound, so correct means error <= 1;
    * with `exact` (exact-valued data, whose every association rounds nothing), and for min, max and integer
      results, it equals NumPy's own result with ``==``: the error is 0.0, or inf;
    * a NaN where the reference has none (an element a scan left poisoned) makes the error NaN: not correct.

    `reference` (the float64 reference of a bounded op, else NumPy's result) and `bound` (the per-element
    bound; bounded ops only) are computed here when not given.
    """
    kind, gr_op = OPERATORS[op]
    x = np.asarray(x)
    got = np.asarray(got)
    dtype = _result_dtype(op, x.dtype)
    if got.dtype != dtype or got.shape != ((x.size,) if kind == "scan" else ()):
        return math.inf, False
    got = got.reshape(-1)
    if exact or not _bounded(op, dtype):
        expected = np.asarray(_NUMPY_OPS[op](x) if reference is None else reference).reshape(-1)
        err = _exact_error(got, expected, chunk)
    else:
        if reference is None:
            reference = _reference(x, kind, gr_op)
        if bound is None:

            bound = error_bound(op, x, dtype, variant=variant, reference=reference)
        err = _bounded_error(got, np.asarray(reference).reshape(-1), bound, chunk)
    return err, err <= 1.0  # NaN compares False


def _exact_data(n, dtype, gr_op, rng):
    """n values of `dtype` on which `gr_op` is exact in any order of association, so that every variant's result
    must equal NumPy's bit for bit; no NaN, no result near a limit.

    sum: small integers (-3..3; 0..3 unsigned), made sparse where n * 3 would pass the largest integer up to
    which the float dtype is exact (2048 for float16), so that every partial sum of any subset is exact and
    the result representable.  prod: +-1 with a few 2s and 0.5s (floats: fewer than the exponent range, so
    no partial product overflows or underflows), odd integers +-1, +-3 (integers: the wrapped products are
    exact and never 0).  min, max: a random walk of +-1 steps, so that the running extremes keep changing.
    """
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.integers(0, 2, n, dtype=np.int8).astype(bool)
    floating = dtype_kind(dt) in "fc"
    if gr_op == "sum":
        vals = rng.integers(0 if dt.kind == "u" else -3, 4, n, dtype=np.int8)
        limit = 2 ** (finfo(dt).nmant + 1) if floating else None
        if limit is not None and 3 * n > limit:
            vals[rng.integers(0, -(-6 * n // limit), n, dtype=np.uint32) != 0] = 0  # sum |x| about limit / 3
            if int(np.abs(vals).sum(dtype=np.int64)) > limit:  # (never in practice) cut it where it passes
                over = np.flatnonzero(np.cumsum(np.abs(vals), dtype=np.int64) > limit)
                vals[over[0]:] = 0
        return vals.astype(dt)
    if gr_op == "prod":
        if not floating:
            if dt.kind == "u":
                return (rng.integers(0, 2, n, dtype=np.int8) * 2 + 1).astype(dt)
            return (rng.integers(0, 4, n, dtype=np.int8) * 2 - 3).astype(dt)
        vals = (rng.integers(0, 2, n, dtype=np.int8) * 2 - 1).astype(dt)
        info = finfo(dt)
        k = min(n // 4, min(int(info.maxexp), -int(info.minexp)) - 2)  # partial products within 2^-k .. 2^k
        vals[rng.integers(0, n, k)] *= 2
        vals[rng.integers(0, n, k)] /= 2
        return vals
    walk = np.cumsum(rng.integers(-1, 2, n, dtype=np.int8), dtype=np.int64 if n >= 2**31 else np.int32)
    top = min(2 ** (finfo(dt).nmant + 1) if floating else int(np.iinfo(dt).max), 2**30)
    if dt.kind == "u":
        return (np.clip(walk, -(top // 2), top // 2) + top // 2).astype(dt)
    return np.clip(walk, -top, top).astype(dt)


def _poison_byte(expected, result_dtype):
    """The fill byte of a checked scan's out=: 0xFF (NaN) for floats, for integers a sentinel (0xA5A5...) that
    is no element of `expected`, so that an element left unwritten can never pass for a right one; None if
    every candidate is taken (never in practice: the check then runs without poison)."""
    dt = np.dtype(result_dtype)
    expected = np.asarray(expected)
    for byte in _FLOAT_POISON if dtype_kind(dt) in "fc" else _INT_POISON:
        value = np.frombuffer(bytes([byte]) * dt.itemsize, dtype=dt)[0]
        if dtype_kind(dt) in "fc" and np.isnan(value):
            clash = dtype_kind(expected.dtype) in "fc" and bool(np.isnan(expected).any())
        else:
            clash = bool(np.any(expected == value))
        if not clash:
            return byte
    return None


@dataclass
class _Case:
    """One input of the correctness check, and what a result of it is judged against."""

    x: np.ndarray                # the values, on the host
    dev: object                  # the same values on the device
    exact: bool                  # judged with == against NumPy (exact-valued data)
    reference: np.ndarray        # the float64 reference of a bounded op, else NumPy's own result
    bounds: dict | None = None   # {variant: per-element bound} of a bounded op on ordinary data
    poison: tuple | None = None  # (result dtype, fill byte) of a scan's out=
    rounded: np.ndarray | None = None  # the exact sum rounded once: what an "exact" variant must give, bit for bit


def _case(op, x, dev, names, exact=False, reference=None):
    """The _Case of input `x` (on the device as `dev`) for the variants `names`."""
    kind, gr_op = OPERATORS[op]
    dtype = _result_dtype(op, x.dtype)
    bounded = not exact and _bounded(op, dtype)
    if reference is None:
        reference = _reference(x, kind, gr_op) if bounded else np.asarray(_NUMPY_OPS[op](x))
    bounds = _bounds(op, x, dtype, reference, names) if bounded else None
    poison = None
    if kind == "scan":
        byte = _poison_byte(reference, dtype)
        poison = None if byte is None else (dtype, byte)
    return _Case(x, dev, exact, reference, bounds, poison)


def _judge_case(op, case, got, variant):
    """_judge of a result of `case`'s input.  A variant with the "exact" property is held to the correctly
    rounded sum's bits (its error bound is zero: against the float64 reference it would read 0/0 or x/0)."""
    kind, gr_op = OPERATORS[op]
    dtype = _result_dtype(op, case.x.dtype)
    if exact_call(kind, variant, gr_op, case.x, dtype, None, None, True):
        if case.rounded is None:
            case.rounded = np.asarray(exact_result(gr_op, case.x, dtype))
        got = np.asarray(got)
        if same_exact_result(got, case.rounded):
            return 0.0, True
        return (math.nan if got.shape == () and np.isnan(got) else math.inf), False
    bound = None if case.bounds is None else case.bounds.get(variant)
    return _judge(op, case.x, got, variant, exact=case.exact, reference=case.reference, bound=bound)


def _exact_case(op, n, dtype, rng, timing, names, tries=8):
    """The _Case of exact-valued data (its device copy not yet made).  For a reduction, data whose answer would
    not pass the timing data's check: a variant whose result is stale (it wrote nothing, and the runner's result
    slot still holds an earlier answer) returns one value for both, which then fails one of the two."""
    kind, gr_op = OPERATORS[op]
    for _ in range(tries):
        case = _case(op, _exact_data(n, dtype, gr_op, rng), None, names, exact=True)
        if kind == "scan" or not _judge_case(op, timing, case.reference[()], names[0])[1]:
            break
    return case


def _check_variant(op, v, timing, exact):
    """(error, correct, deterministic) of variant `v` from three checked calls, made after the timed ones, in
    this order: the timing data, the exact data, the timing data again, each judged by _judge.  A scan writes
    each into a freshly poisoned out=.  A reduction whose answer is stale (it wrote nothing: the runner's result
    slot still holds an earlier answer) returns one value for all three, which cannot pass both the exact
    data's check and the timing data's (_exact_case picks data for that).  The error is the worst of the three;
    deterministic: the two timing-data results are bitwise equal (the second is then judged as the first)."""
    kind, gr_op = OPERATORS[op]
    first = _run_once(kind, v, gr_op, timing.dev, timing.poison)
    exact_got = _run_once(kind, v, gr_op, exact.dev, exact.poison)
    again = _run_once(kind, v, gr_op, timing.dev, timing.poison)
    errors = [_judge_case(op, timing, first, v.name)[0], _judge_case(op, exact, exact_got, v.name)[0]]
    deterministic = _bitwise_equal(first, again)
    if not deterministic:
        errors.append(_judge_case(op, timing, again, v.name)[0])
    err = _worst(*errors)
    return err, err <= 1.0, deterministic


# ----------------------------------------------------------------------------- peers

PEERS = ("cupy", "torch", "numpy")  # the libraries measured beside ours, in table and plot order


class _Unavailable(Exception):
    """Why a peer is left out of a run: its rows are missing and the table says why."""


def _cupy_peer(cupy, op):
    fn = {"sum": cupy.sum, "prod": cupy.prod, "min": cupy.min, "max": cupy.max, "cumsum": cupy.cumsum,
          "cumprod": cupy.cumprod}.get(op)
    if fn is None:
        raise _Unavailable(f"has no {op}")
    return lambda dev, host: functools.partial(fn, cupy.asarray(dev))  # a view (CUDA Array Interface)


def _torch_peer(torch, op):
    if not torch.cuda.is_available():
        raise _Unavailable("installed without CUDA")
    fn = {"sum": torch.sum, "prod": torch.prod, "min": torch.min, "max": torch.max,
          "cumsum": lambda x: torch.cumsum(x, 0), "cumprod": lambda x: torch.cumprod(x, 0),
          "cummax": lambda x: torch.cummax(x, 0), "cummin": lambda x: torch.cummin(x, 0)}[op]
    return lambda dev, host: functools.partial(fn, torch.from_dlpack(dev))  # a view (DLPack, stream-ordered)


def _numpy_peer(numpy, op):
    fn = _NUMPY_OPS[op]
    return lambda dev, host: functools.partial(fn, host)


_PEER_FACTORIES = {"cupy": _cupy_peer, "torch": _torch_peer, "numpy": _numpy_peer}


def _peer_calls(op):
    """{peer: bind(dev, host) -> the call to time} for the peers that can run `op` here, and {peer: why not}
    for the others: a missing library is no error, its rows are left out."""
    calls, missing = {}, {}
    for name in PEERS:
        try:
            calls[name] = _PEER_FACTORIES[name](importlib.import_module(name), op)
        except ModuleNotFoundError as e:
            missing[name] = "not installed" if e.name == name else f"cannot be imported: {e}"
        except ImportError as e:  # e.g. a CuPy built for another CUDA
            missing[name] = f"cannot be imported: {e}"
        except _Unavailable as e:
            missing[name] = str(e)
    return calls, missing


def _time_peer(name, call, repeat, warmup):
    if name == "numpy":  # on the host: a wall clock, one warm-up
        return _host_timer(call, repeat, 1)
    return _core.time_calls(call, repeat, warmup)


def benchmark(op="sum", variants="all", sizes=DEFAULT_SIZES, dtype="float32", repeat=30, peers=True,
              progress=True, warmup=3, seed=None) -> "BenchmarkResult":
    """Time each variant, and the peer libraries, at each size on the current device.

    Parameters
    ----------
    op : str, optional
        "sum", "prod", "min", "max" (reductions) or "cumsum", "cumprod", "cummin", "cummax" (scans).
    variants : str or list of str, optional
        "all", a variant name, or a list of names (``cub`` is always added as the baseline).
    sizes : sequence of int, optional
        Element counts (``parse_sizes`` turns the command line's "2^10:2^28" into such a list).
    dtype : str or numpy.dtype, optional
        The input dtype.
    repeat : int, optional
        Timed calls per row; the row shows their median, minimum and maximum.
    peers : bool, optional
        Also time CuPy and PyTorch, those installed, on views of the same device arrays, and NumPy on
        the host.
    progress : bool, optional
        Show a tqdm progress bar (if tqdm is installed).
    warmup : int, optional
        Untimed calls before the timed ones.
    seed : int, optional
        Seed of the random inputs.

    Returns
    -------
    BenchmarkResult
        One row per variant and peer and size: time, GB/s, % of the device's ceiling, speed-ups, the
        error (the worst element's distance from a float64 NumPy reference, as a fraction of its bound),
        whether the variant is correct, and determinism (two calls bitwise equal).  ``missing_peers`` names
        the peers that could not be measured, and why; printing the result says so.

    Raises
    ------
    ValueError
        An unknown op, variant or dtype, a dtype a chosen variant lacks, a non-positive repeat or size, or
        a size that does not fit in free device memory: checked before any work.
    gpureduce.CudaError
        There is no CUDA device (the message says why).

    See Also
    --------
    device_info : The device and its ceilings.

    Notes
    -----
    Needs only NumPy: inputs live in gpureduce.DeviceArrays; our variants are timed inside the extension
    with CUDA events, the L2 flushed before every call; CuPy and PyTorch calls are timed the same way on
    the legacy default stream; NumPy with a wall clock.  Results are checked on the host, after each
    variant's timed calls: "correct" means that three more calls -- on the timing data, on exact-valued
    data (small integers, +-1 and powers of two, a random walk: every association rounds nothing), and on
    the timing data again -- have NumPy's dtype and shape; that each element of a floating sum or product
    of the timing data lies within its own bound, ``gpureduce.testing.error_bound`` (for a scan,
    proportional to the cumulative sum of ``|x|`` up to that element); and that the results on the
    exact-valued data, and of min, max and integers, equal NumPy's (``==``).  A scan writes each of these
    results into a new ``out=`` filled with NaN (a sentinel that is no element of the answer for integers),
    so that an element it leaves unwritten shows; a reduction's answer on the exact-valued data cannot pass
    the timing data's check, so that a stale result shows.  "err/bound" is the worst element's error over
    its bound (inf for a wrong exact result, dtype or shape, NaN for an element left unwritten).
    """
    kind, gr_op, chosen, dtype, sizes = _validate(op, variants, sizes, dtype, repeat)
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    _check_memory(sizes, dtype, kind)
    peer_calls, missing = _peer_calls(op) if peers else ({}, {})
    rng = np.random.default_rng(seed)
    # the exact-valued check data come from a stream of their own: the timing data stay those of `seed`
    exact_rng = np.random.default_rng([int(seed), 1] if isinstance(seed, (int, np.integer)) else None)
    steps = len(sizes) * (len(chosen) + len(peer_calls))
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=steps, desc=f"gpureduce {op} {dtype}", leave=False)
        except ImportError:
            bar = None
    rows = []
    names = [v.name for v in chosen]
    try:
        for n in sizes:
            host = _random(n, dtype, gr_op, rng)
            dev = _core.to_device(host)
            timing = _case(op, host, dev, names)
            exact = _exact_case(op, n, dtype, exact_rng, timing, names)
            exact.dev = _core.to_device(exact.x)
            wide = np.dtype(dtype).kind in "iu" and gr_op in ("sum", "prod")
            out_item = np.dtype(np.int64 if wide else dtype).itemsize
            moved = host.nbytes + (n * out_item if kind == "scan" else 0)
            yardstick = "read" if kind == "reduce" else "copy"
            ceiling = statistics.median(_core.time_ceiling(yardstick, dev, repeat, warmup))
            if kind == "scan":  # the copy moves in+out of the input's size; scale to this scan's bytes
                ceiling *= moved / (2 * host.nbytes)
            group = []
            for v in chosen:
                (times, _value), reps = _time_ours(kind, v, gr_op, dev, repeat, warmup)
                err, correct, deterministic = _check_variant(op, v, timing, exact)  # after the timed calls
                group.append(_row(v.name, op, n, dtype, times, moved, ceiling, reps, rel_error=err,
                                  correct=correct, deterministic=deterministic))
                if bar is not None:
                    bar.update(1)
            for name, bind in peer_calls.items():
                times = _time_peer(name, bind(dev, host), repeat, warmup)
                group.append(_row(name, op, n, dtype, times, moved, ceiling, len(times), peer=True))
                if bar is not None:
                    bar.update(1)
            _speedups(group)
            rows += group
            del dev, timing, exact
    finally:
        if bar is not None:
            bar.close()
    return BenchmarkResult(rows, device_info(), missing)


def _row(name, op, n, dtype, times, moved, ceiling, repeats, rel_error=None, correct=None, deterministic=None,
         peer=False):
    med = statistics.median(times)
    return BenchmarkRow(name, op, n, dtype, med, min(times), max(times), moved / med / 1e3,
                        100.0 * ceiling / med if ceiling else None, rel_error=rel_error, correct=correct,
                        deterministic=deterministic, repeats=repeats, peer=peer)


def _speedups(group):
    ours = [r for r in group if not r.peer]
    for i, r in enumerate(ours):
        r.speedup_total = ours[0].median_us / r.median_us
        r.speedup_step = None if i == 0 else ours[i - 1].median_us / r.median_us


# ----------------------------------------------------------------------------- the result

COLUMNS = [
    ("variant", "variant", "{}"), ("n", "n", "{:,}"), ("median_us", "median us", "{:.1f}"),
    ("min_us", "min us", "{:.1f}"), ("max_us", "max us", "{:.1f}"), ("gbps", "GB/s", "{:.0f}"),
    ("pct_ceiling", "% ceiling", "{:.0f}%"), ("speedup_step", "step x", "{:.2f}"),
    ("speedup_total", "total x", "{:.2f}"), ("rel_error", "err/bound", "{:.1e}"),
    ("correct", "correct", "{}"), ("deterministic", "determ.", "{}"),
]


class BenchmarkResult:
    """Rows of a benchmark run with the device they ran on, and the peers that could not be measured
    ({name: why}); prints as a table, renders in Jupyter, exports to CSV / JSON / pandas, and plots."""

    def __init__(self, rows, device, missing_peers=None):
        self.rows = list(rows)
        self.device = dict(device)
        self.missing_peers = dict(missing_peers or {})

    def __len__(self):
        return len(self.rows)

    def __iter__(self):
        return iter(self.rows)

    def _cells(self):
        for r in self.rows:
            cells = []
            for attr, _head, fmt in COLUMNS:
                v = getattr(r, attr)
                if v is None:
                    cells.append("")
                elif isinstance(v, bool):
                    cells.append("yes" if v else "NO")
                else:
                    cells.append(fmt.format(v))
            yield r, cells

    def title(self):
        ops = sorted({(r.op, r.dtype) for r in self.rows})
        what = ", ".join(f"{op} {dt}" for op, dt in ops)
        d = self.device
        ceil = f"read {d.get('read_gbps', 0):.0f} GB/s, copy {d.get('copy_gbps', 0):.0f} GB/s" if d else ""
        return f"{what} on {d.get('name', '?')} ({d.get('sm_count', '?')} SMs; ceilings: {ceil}); cold L2, medians"

    def note(self):
        """The line "peers not measured: cupy (not installed), ...", or "" when every peer asked for was."""
        if not self.missing_peers:
            return ""
        return "peers not measured: " + ", ".join(f"{name} ({why})" for name, why in self.missing_peers.items())

    def __str__(self):
        heads = [h for _a, h, _f in COLUMNS]
        body = list(self._cells())
        widths = [max(len(h), *(len(c[i]) for _r, c in body)) if body else len(h) for i, h in enumerate(heads)]

        def line(cells):
            return "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

        out = [self.title(), line(heads), line(["-" * w for w in widths])]
        prev_n = None
        for r, cells in body:
            if prev_n is not None and r.n != prev_n:
                out.append("")
            out.append(line(cells))
            prev_n = r.n
        if self.note():
            out.append(self.note())
        return "\n".join(out)

    def __repr__(self):
        return f"<BenchmarkResult: {len(self.rows)} rows; {self.title()}>"

    def _repr_html_(self):
        import html

        heads = "".join(f"<th>{html.escape(h)}</th>" for _a, h, _f in COLUMNS)
        trs = []
        for r, cells in self._cells():
            style = ' style="color:#666"' if r.peer else ""
            tds = "".join(f'<td style="text-align:{"left" if i == 0 else "right"}">{html.escape(c)}</td>'
                          for i, c in enumerate(cells))
            trs.append(f"<tr{style}>{tds}</tr>")
        note = f"<p>{html.escape(self.note())}</p>" if self.note() else ""
        return (f"<div><p><b>{html.escape(self.title())}</b></p><table><thead><tr>{heads}</tr></thead>"
                f"<tbody>{''.join(trs)}</tbody></table>{note}</div>")

    def to_records(self):
        return [asdict(r) for r in self.rows]

    def to_dataframe(self):
        try:
            import pandas as pd
        except ImportError as e:
            raise ImportError("to_dataframe() needs pandas: pip install pandas") from e
        return pd.DataFrame(self.to_records())

    def to_csv(self, path=None):
        buf = io.StringIO()
        fields = list(BenchmarkRow.__dataclass_fields__)
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows(self.to_records())
        text = buf.getvalue()
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def to_json(self, path=None):
        text = json.dumps({"device": self.device, "missing_peers": self.missing_peers, "rows": self.to_records()},
                          indent=1)
        if path is not None:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        return text

    def plot(self, path=None):
        """GB/s against n (log axes), one line per variant, the ceiling as a dashed line; a second panel
        with the speed-up over CUB.  Returns the matplotlib Figure (never calls plt.show())."""
        try:
            import matplotlib

            if path is not None:
                matplotlib.use("Agg", force=False)
            from matplotlib.figure import Figure
        except ImportError as e:
            raise ImportError("plot() needs matplotlib: pip install matplotlib") from e
        fig = Figure(figsize=(11, 4.5), layout="constrained")
        ax_bw, ax_sp = fig.subplots(1, 2)
        names = list(dict.fromkeys(r.variant for r in self.rows))
        cub = {r.n: r.median_us for r in self.rows if r.variant == "cub"}
        ceiling = {}
        for r in self.rows:
            if r.pct_ceiling:
                ceiling[r.n] = r.gbps * 100.0 / r.pct_ceiling
        styles = series_styles(names)
        for name in names:
            rs = sorted((r for r in self.rows if r.variant == name), key=lambda r: r.n)
            headline = name in ("auto", "cub")
            colour, marker = styles[name]
            style = dict(linestyle=":" if rs[0].peer else "-", marker=marker, markersize=4, label=name, color=colour,
                         linewidth=2.5 if headline else 1.2, zorder=3 if headline else 2)
            ax_bw.plot([r.n for r in rs], [r.gbps for r in rs], **style)
            pts = [(r.n, cub[r.n] / r.median_us) for r in rs if r.n in cub]
            if pts:
                ax_sp.plot(*zip(*pts), **style)
        if ceiling:
            ns = sorted(ceiling)
            ax_bw.plot(ns, [ceiling[n] for n in ns], "k--", linewidth=1.5, label="ceiling")
        for ax in (ax_bw, ax_sp):
            ax.set_xscale("log", base=2)
            ax.set_xlabel("elements")
            ax.grid(True, which="both", alpha=0.3)
        ax_bw.set_yscale("log")
        ax_bw.set_ylabel("GB/s (bytes that must move)")
        ax_sp.set_yscale("log", base=2)
        ax_sp.set_ylabel("speed-up over cub")
        ax_sp.axhline(1.0, color="k", linewidth=1)
        ax_bw.legend(fontsize=7, ncol=2)
        fig.suptitle(self.title(), fontsize=9)
        if path is not None:
            fig.savefig(path, dpi=120)
        return fig


# ----------------------------------------------------------------------------- plot styles

# One series' look in every plot comes from its position in one list: the registry's names (both kinds, in
# declaration order: "cub" and "auto" look the same in a sum plot and a cumsum plot), then PEERS.  Position
# i gets colour i mod 10 and marker i mod 11: 10 and 11 are coprime, so the first 110 positions all differ
# in their (colour, marker) pair, and neighbours differ in both.
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h")
_SERIES = tuple(dict.fromkeys([v.name for v in ALL] + list(PEERS)))


def series_styles(names) -> dict:
    """{name: (colour, marker)} for matplotlib, stable across plots; names outside the registry and PEERS
    (rows read back from another build) take the positions after them, in the order given."""
    from matplotlib import colormaps

    colours = colormaps["tab10"].colors
    extra = [n for n in dict.fromkeys(names) if n not in _SERIES]
    position = {n: i for i, n in enumerate(_SERIES + tuple(extra))}
    return {n: (colours[position[n] % len(colours)], _MARKERS[position[n] % len(_MARKERS)]) for n in names}
