"""gpureduce.benchmark(): the seeds' tables (time, GB/s, % of the hardware's limit, error, speed-ups)
measured on the GPU at hand, for a terminal, a notebook, a CSV file or a plot.

Method (DESIGN.md section 6): our variants are timed inside the extension with CUDA events around each
call and the L2 flushed before each one (cold cache), after warm-up calls; the figure is the median.
Peers (CuPy, PyTorch), where installed, are timed the same way (_core.time_calls) on views of the same
device arrays in the same run; NumPy on the host with a wall clock.  GB/s counts the bytes that must move:
the input for a reduction, input and output for a scan.  "% ceiling" compares with a plain vectorised read
(reductions) or a device-to-device copy (scans) of the same bytes, timed the same way at the same size.
Only NumPy is needed: inputs live in gpureduce.DeviceArrays, results are checked on the host.
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
from ._operands import to_host
from ._registry import ALL, DTYPE_NAMES, OP_NAMES, did_you_mean, variants as _variants

__all__ = ["benchmark", "BenchmarkResult", "BenchmarkRow", "device_info", "parse_sizes", "series_styles", "PEERS"]

# Public operator names -> (kind, gr operator)
OPERATORS = {
    "sum": ("reduce", "sum"), "prod": ("reduce", "prod"), "min": ("reduce", "min"), "max": ("reduce", "max"),
    "cumsum": ("scan", "sum"), "cumprod": ("scan", "prod"), "cummin": ("scan", "min"), "cummax": ("scan", "max"),
}
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
    rel_error: float | None = None       # max |result - float64 reference| / the error's natural scale
    correct: bool | None = None          # rel_error within the bound for this op, dtype and n
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
        ``device`` (ordinal), ``name``, ``compute_capability`` (major, minor), ``sm_count``, ``l2_bytes``,
        ``memory_bytes``, and the ceilings the benchmark's "% ceiling" column compares with: ``read_gbps``
        (a vectorised read of 1 GiB) and ``copy_gbps`` (a 1 GiB device-to-device copy, read + write bytes),
        both timed with CUDA events, cold L2, median of 10.

    Raises
    ------
    gpureduce.CudaError
        There is no CUDA device; the message says why (no driver, a driver too old, no GPU visible).

    See Also
    --------
    benchmark : The tables these ceilings are the 100% of.

    Notes
    -----
    Needs only NumPy: the 1 GiB buffer is a gpureduce.DeviceArray.
    """
    props = _core.device_properties()
    if props["device"] in _DEVICE_INFO and not remeasure:
        return dict(_DEVICE_INFO[props["device"]])
    buf = _core.empty((2**28,), np.float32, 0)  # 1 GiB of zeros
    read_us = statistics.median(_core.time_device("read", buf, 10, 2)[0])
    copy_us = statistics.median(_core.time_device("copy", buf, 10, 2)[0])
    info = dict(props, read_gbps=buf.nbytes / read_us / 1e3, copy_gbps=2 * buf.nbytes / copy_us / 1e3)
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
    need = max(sizes) * (item + out_item) + (256 << 20)  # input, output, flush buffer and workspace
    if need > free:
        raise ValueError(f"n={max(sizes):,} {dtype} needs about {need:,} bytes of device memory; {free:,} are free")


# ----------------------------------------------------------------------------- measuring

def _random(n, dtype, gr_op, rng):
    dt = np.dtype(dtype)
    if dt.kind == "f":
        if gr_op == "prod":
            return (1 + rng.uniform(-2.0**-12, 2.0**-12, n)).astype(dt)
        return rng.uniform(-1, 1, n).astype(dt)
    if gr_op == "prod":
        return rng.choice(np.array([-1, 1, 3], dtype=dt), n)
    return rng.integers(-1000, 1000, n, dtype=dt)


def _reference(host, kind, gr_op):
    x = host.astype(np.float64) if host.dtype.kind == "f" else host.astype(np.int64)
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


def _error_scale(host, ref, gr_op):
    """What rounding error is proportional to: sum|x| for a sum (its partial sums for a scan), |result| for
    a product; min/max and integers must be exact, so any scale will do."""
    if gr_op == "sum" and host.dtype.kind == "f":
        return float(np.sum(np.abs(host), dtype=np.float64))
    return float(np.max(np.abs(np.asarray(ref, dtype=np.float64)))) if np.size(ref) else 1.0


def _rel_error(got, ref, scale, chunk=1 << 22):
    """max |got - ref| / scale in float64, NaN where only one side is NaN, inf for a wrong shape; in chunks,
    so a 2^28-element scan needs no 2 GiB temporaries."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return math.inf
    got, ref = got.reshape(-1), ref.reshape(-1)
    worst = 0.0
    for i in range(0, ref.size, chunk):
        g = got[i:i + chunk].astype(np.float64)
        r = ref[i:i + chunk].astype(np.float64)
        diff = np.where(np.isnan(g) & np.isnan(r), 0.0, np.abs(g - r))
        d = float(np.max(diff))
        if math.isnan(d):
            return math.nan  # fails `err <= bound`, as it must
        worst = max(worst, d)
    return worst / max(scale, 1e-300)


def error_bound(gr_op, dtype, n):
    """The relative error (as _rel_error measures it) a correct variant stays under."""
    dt = np.dtype(dtype)
    if dt.kind != "f" or gr_op in ("min", "max"):
        return 0.0
    eps, lg = float(np.finfo(dt).eps), math.log2(max(n, 2))
    return 8 * eps * lg * (math.sqrt(n) if gr_op == "prod" else 1.0)


def _time_ours(kind, v, gr_op, dev, repeat, warmup):
    op_code = OP_NAMES.index(gr_op)
    probe, _ = _core.time_device(kind, dev, 1, 1, True, v.index, op_code)
    if probe[0] * 1e-6 > SLOW_CALL_S:  # the one-thread scan and friends: a few calls are plenty
        repeat, warmup = min(repeat, 3), 0
    return _core.time_device(kind, dev, repeat, warmup, True, v.index, op_code), repeat


def _run_once(kind, v, gr_op, dev):
    """The variant's result on the host (a NumPy scalar or array) for the error and determinism columns."""
    if kind == "reduce":
        return reductions.reduce(gr_op, dev, variant=v.name)
    return to_host(scans.scan(gr_op, dev, variant=v.name))


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
    fn = {"sum": numpy.sum, "prod": numpy.prod, "min": numpy.min, "max": numpy.max, "cumsum": numpy.cumsum,
          "cumprod": numpy.cumprod, "cummax": numpy.maximum.accumulate, "cummin": numpy.minimum.accumulate}[op]
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
        error against a float64 NumPy reference and whether it is within the bound for the op, dtype and
        n, and determinism (two calls bitwise equal).  ``missing_peers`` names the peers that could not
        be measured, and why; printing the result says so.

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
    the legacy default stream; NumPy with a wall clock.  Results are checked on the host.
    """
    kind, gr_op, chosen, dtype, sizes = _validate(op, variants, sizes, dtype, repeat)
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    _check_memory(sizes, dtype, kind)
    peer_calls, missing = _peer_calls(op) if peers else ({}, {})
    rng = np.random.default_rng(seed)
    steps = len(sizes) * (len(chosen) + len(peer_calls))
    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=steps, desc=f"gpureduce {op} {dtype}", leave=False)
        except ImportError:
            bar = None
    rows = []
    try:
        for n in sizes:
            host = _random(n, dtype, gr_op, rng)
            dev = _core.to_device(host)
            ref = _reference(host, kind, gr_op)
            scale = _error_scale(host, ref, gr_op)
            bound = error_bound(gr_op, dtype, n)
            out_item = np.dtype(np.int64 if np.dtype(dtype).kind in "iu" and gr_op in ("sum", "prod") else dtype).itemsize
            moved = host.nbytes + (n * out_item if kind == "scan" else 0)
            ceiling = statistics.median(_core.time_device("read" if kind == "reduce" else "copy", dev, repeat, warmup)[0])
            if kind == "scan":  # the copy moves in+out of the input's size; scale to this scan's bytes
                ceiling *= moved / (2 * host.nbytes)
            group = []
            for v in chosen:
                (times, _value), reps = _time_ours(kind, v, gr_op, dev, repeat, warmup)
                first = _run_once(kind, v, gr_op, dev)
                again = _run_once(kind, v, gr_op, dev)
                err = _rel_error(first, ref, scale)
                group.append(_row(v.name, op, n, dtype, times, moved, ceiling, reps, rel_error=err,
                                  correct=err <= bound, deterministic=_bitwise_equal(first, again)))
                del first, again
                if bar is not None:
                    bar.update(1)
            for name, bind in peer_calls.items():
                times = _time_peer(name, bind(dev, host), repeat, warmup)
                group.append(_row(name, op, n, dtype, times, moved, ceiling, len(times), peer=True))
                if bar is not None:
                    bar.update(1)
            _speedups(group)
            rows += group
            del dev
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
    ("speedup_total", "total x", "{:.2f}"), ("rel_error", "rel error", "{:.1e}"),
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
