"""gpureduce.benchmark(): the seeds' tables (time, GB/s, % of the hardware's limit, error, speed-ups)
measured on the GPU at hand, for a terminal, a notebook, a CSV file or a plot.

Method (DESIGN.md section 6): our variants are timed inside the extension with CUDA events around each
call and the L2 flushed before each one (cold cache), after warm-up calls; the figure is the median.
Peers (CuPy, PyTorch) are timed the same way on the same device arrays in the same run; NumPy on the
host with a wall clock.  GB/s counts the bytes that must move: the input for a reduction, input and
output for a scan.  "% ceiling" compares with a plain vectorised read (reductions) or a device-to-device
copy (scans) of the same bytes, timed the same way at the same size.
"""
from __future__ import annotations

import csv
import io
import json
import math
import statistics
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from . import _core
from ._registry import DTYPE_NAMES, OP_NAMES, variants as _variants

__all__ = ["benchmark", "BenchmarkResult", "BenchmarkRow", "device_info", "parse_sizes"]

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


def _cupy():
    try:
        import cupy
    except ImportError as e:  # pragma: no cover - depends on the machine
        raise RuntimeError("gpureduce.benchmark holds its inputs in CuPy arrays: install cupy") from e
    return cupy


def device_info(remeasure: bool = False) -> dict:
    """The current device's name, SM count, L2 and memory sizes, and its measured ceilings (GB/s of a
    1 GiB vectorised read and of a 1 GiB device-to-device copy, read + write bytes), measured once."""
    cupy = _cupy()
    dev = cupy.cuda.Device()
    if dev.id in _DEVICE_INFO and not remeasure:
        return dict(_DEVICE_INFO[dev.id])
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    buf = cupy.empty(2**28, dtype=cupy.float32)  # 1 GiB
    buf.fill(1.0)
    read_us = statistics.median(_core.time_device("read", buf, 10, 2)[0])
    copy_us = statistics.median(_core.time_device("copy", buf, 10, 2)[0])
    info = dict(
        device=dev.id, name=name, sm_count=int(props["multiProcessorCount"]), l2_bytes=int(props["l2CacheSize"]),
        memory_bytes=int(props["totalGlobalMem"]), read_gbps=buf.nbytes / read_us / 1e3,
        copy_gbps=2 * buf.nbytes / copy_us / 1e3,
    )
    del buf
    _DEVICE_INFO[dev.id] = info
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
        raise ValueError(f"unknown op {op!r}; benchmarkable ops are {', '.join(OPERATORS)}")
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
            raise ValueError(f"unknown {kind} variant(s) {', '.join(map(repr, unknown))}; valid: {', '.join(by_name)}")
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


def _check_memory(cupy, sizes, dtype, kind):
    free, _total = cupy.cuda.runtime.memGetInfo()
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


def _bitwise_equal(cupy, a, b):
    if isinstance(a, np.generic):
        return a.tobytes() == b.tobytes()
    bits = {1: cupy.uint8, 2: cupy.uint16, 4: cupy.uint32, 8: cupy.uint64}[a.dtype.itemsize]
    return bool(cupy.array_equal(a.view(bits), b.view(bits)))


def _device_error(cupy, got, ref, ref_dev, scale):
    """_rel_error computed where the result is: a 2^28-element scan is compared on the device."""
    if isinstance(got, np.generic):
        return _rel_error(got, ref, scale)
    if got.size == 0:
        return 0.0
    diff = cupy.abs(got.astype(cupy.float64) - ref_dev.astype(cupy.float64))
    return float(cupy.max(diff)) / max(scale, 1e-300)


def _error_scale(host, ref, gr_op):
    """What rounding error is proportional to: sum|x| for a sum (its partial sums for a scan), |result| for
    a product; min/max and integers must be exact, so any scale will do."""
    if gr_op == "sum" and host.dtype.kind == "f":
        return float(np.sum(np.abs(host), dtype=np.float64))
    return float(np.max(np.abs(np.asarray(ref, dtype=np.float64)))) if np.size(ref) else 1.0


def _rel_error(got, ref, scale):
    got = np.asarray(got, dtype=np.float64)
    ref = np.asarray(ref, dtype=np.float64)
    if ref.size == 0:
        return 0.0
    same_nan = np.isnan(got) & np.isnan(ref)
    diff = np.where(same_nan, 0.0, np.abs(got - ref))
    return float(np.max(diff)) / max(scale, 1e-300)


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
    """The variant's result (a NumPy scalar, or a CuPy view of the DeviceArray) for the error and
    determinism columns: scans stay on the device, a 2^28-element copy home per variant would dominate."""
    from . import reductions

    if kind == "reduce":
        return reductions.reduce(gr_op, dev, variant=v.name)
    from . import scans

    return _cupy().asarray(scans.scan(gr_op, dev, variant=v.name))


def _device_timer(cupy):
    flush = cupy.empty(2 * cupy.cuda.Device().attributes["L2CacheSize"], dtype=cupy.uint8)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()

    def run(fn, repeat, warmup):
        times = []
        for i in range(warmup + repeat):
            flush.fill(i & 0xFF)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            if i >= warmup:
                times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
        return times

    return run


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


def _peers(kind, gr_op, dev, host, timer, repeat, warmup):
    """(name, times_us) of each peer that is installed."""
    cupy = _cupy()
    out = []
    cp_fn = {("reduce", o): getattr(cupy, o) for o in ("sum", "prod", "min", "max")}
    cp_fn.update({("scan", "sum"): cupy.cumsum, ("scan", "prod"): cupy.cumprod})
    if (kind, gr_op) in cp_fn:
        out.append(("cupy", timer(lambda: cp_fn[kind, gr_op](dev), repeat, warmup)))
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and torch.cuda.is_available():
        t = torch.as_tensor(dev, device="cuda")
        th_fn = {("reduce", "sum"): torch.sum, ("reduce", "prod"): torch.prod, ("reduce", "min"): torch.min,
                 ("reduce", "max"): torch.max, ("scan", "sum"): lambda x: torch.cumsum(x, 0),
                 ("scan", "prod"): lambda x: torch.cumprod(x, 0), ("scan", "max"): lambda x: torch.cummax(x, 0),
                 ("scan", "min"): lambda x: torch.cummin(x, 0)}
        out.append(("torch", timer(lambda: th_fn[kind, gr_op](t), repeat, warmup)))
    np_fn = {("reduce", o): getattr(np, o) for o in ("sum", "prod", "min", "max")}
    np_fn.update({("scan", "sum"): np.cumsum, ("scan", "prod"): np.cumprod,
                  ("scan", "max"): np.maximum.accumulate, ("scan", "min"): np.minimum.accumulate})
    out.append(("numpy", _host_timer(lambda: np_fn[kind, gr_op](host), repeat, 1)))
    return out


def benchmark(op="sum", variants="all", sizes=DEFAULT_SIZES, dtype="float32", repeat=30, peers=True,
              progress=True, warmup=3, seed=None) -> "BenchmarkResult":
    """Time each variant (and the peers) at each size; return a BenchmarkResult.

    op: "sum", "prod", "min", "max" (reductions) or "cumsum", "cumprod", "cummin", "cummax" (scans).
    variants: "all", a name, or a list of names (``cub`` is always added as the baseline).
    sizes: element counts (see parse_sizes for the string form the command line takes).
    peers: also time CuPy and PyTorch (if importable) on the same device arrays, and NumPy on the host.
    progress: a tqdm progress bar (if tqdm is installed).
    All arguments are checked before any work: unknown names, non-positive repeat, or a size that does
    not fit in free device memory raise ValueError.
    """
    kind, gr_op, chosen, dtype, sizes = _validate(op, variants, sizes, dtype, repeat)
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"warmup must be a non-negative int, got {warmup!r}")
    cupy = _cupy()
    _check_memory(cupy, sizes, dtype, kind)
    rng = np.random.default_rng(seed)
    timer = _device_timer(cupy)
    steps = len(sizes) * (len(chosen) + (3 if peers else 0))
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
            dev = cupy.asarray(host)
            ref = _reference(host, kind, gr_op)
            ref_dev = cupy.asarray(ref) if kind == "scan" else None
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
                err = _device_error(cupy, first, ref, ref_dev, scale)
                group.append(_row(v.name, op, n, dtype, times, moved, ceiling, reps, rel_error=err,
                                  correct=err <= bound, deterministic=_bitwise_equal(cupy, first, again)))
                del first, again
                if bar is not None:
                    bar.update(1)
            if peers:
                for name, times in _peers(kind, gr_op, dev, host, timer, repeat, warmup):
                    group.append(_row(name, op, n, dtype, times, moved, ceiling, len(times), peer=True))
                    if bar is not None:
                        bar.update(1)
            _speedups(group)
            rows += group
            del dev, ref_dev
    finally:
        if bar is not None:
            bar.close()
    return BenchmarkResult(rows, device_info())


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
    """Rows of a benchmark run with the device they ran on; prints as a table, renders in Jupyter,
    exports to CSV / JSON / pandas, and plots."""

    def __init__(self, rows, device):
        self.rows = list(rows)
        self.device = dict(device)

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
        return (f"<div><p><b>{html.escape(self.title())}</b></p><table><thead><tr>{heads}</tr></thead>"
                f"<tbody>{''.join(trs)}</tbody></table></div>")

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
        text = json.dumps({"device": self.device, "rows": self.to_records()}, indent=1)
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
        from matplotlib import colormaps

        colors = colormaps["tab20"].resampled(max(len(names), 2))  # one colour per line: the default cycle has 10
        for i, name in enumerate(names):
            rs = sorted((r for r in self.rows if r.variant == name), key=lambda r: r.n)
            headline = name in ("auto", "cub")
            style = dict(linestyle=":" if rs[0].peer else "-", marker="o", markersize=3, label=name, color=colors(i),
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
