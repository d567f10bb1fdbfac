"""Timing machinery shared by ``python -m gpureduce`` and ``benchmarks/``.

Our variants are timed inside the extension (``_core.time_device``: CUDA events around each call, L2
flushed before each one, warm-up first); peers (CuPy, PyTorch) with their own events and the same flush,
in the same run, on the same device arrays.  Medians are reported; GB/s counts the bytes that must move
(the input for a reduction, input + output for a scan) and "% ceiling" compares with a plain vectorised
read (reductions) or a device-to-device copy (scans) of the same bytes.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import numpy as np

from . import _core
from ._registry import OP_NAMES, variants


def _cupy():
    try:
        import cupy
    except ImportError:  # pragma: no cover - depends on the machine
        return None
    return cupy


@dataclass
class Row:
    variant: str
    n: int
    dtype: str
    times_us: list = field(repr=False)
    bytes_moved: int = 0
    ceiling_us: float | None = None
    error: float | None = None
    correct: bool | None = None
    note: str = ""

    @property
    def median_us(self):
        return statistics.median(self.times_us)

    @property
    def min_us(self):
        return min(self.times_us)

    @property
    def gbps(self):
        return self.bytes_moved / (self.median_us * 1e3)

    @property
    def pct_ceiling(self):
        return None if self.ceiling_us is None else 100.0 * self.ceiling_us / self.median_us


def device_name():
    cupy = _cupy()
    if cupy is None:
        return f"{_core.device_count()} CUDA device(s)"
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    return f"{name}, {props['multiProcessorCount']} SMs, L2 {props['l2CacheSize'] >> 20} MB, " \
           f"{props['totalGlobalMem'] / 2**30:.0f} GiB"


def random_input(n, dtype, op, rng):
    """The benchmark's data: random, never zeros (zeros hide unwritten outputs and can run faster)."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (1 + rng.uniform(-2.0**-10, 2.0**-10, n)).astype(dt) if op == "prod" else rng.uniform(-1, 1, n).astype(dt)
    return rng.integers(-1000, 1000, n, dtype=dt)


def _flushing_timer(cupy, repeats, warmup):
    flush = cupy.empty(2 * cupy.cuda.Device().attributes["L2CacheSize"], dtype=cupy.uint8)
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()

    def run(fn):
        times = []
        for i in range(warmup + repeats):
            flush.fill(i & 0xFF)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            if i >= warmup:
                times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
        return times

    return run


def reduce_table(n=2**24, dtype="float32", op="sum", repeats=30, warmup=3, peers=True, names=None, rng=None):
    """Every reduction variant (or `names`) on one random input, checked against NumPy, then the peers."""
    cupy = _cupy()
    if cupy is None:
        raise RuntimeError("the benchmark needs CuPy to hold its device inputs")
    rng = rng or np.random.default_rng()
    host = random_input(n, dtype, op, rng)
    dev = cupy.asarray(host)
    ref = float(getattr(np, op)(host.astype(np.float64) if host.dtype.kind == "f" else host))
    exact = getattr(np, op)(host)
    nbytes = host.nbytes
    ceiling = statistics.median(_core.time_device("read", dev, repeats, warmup)[0])
    rows = []
    for v in variants(kind="reduce", op=op):
        if names and v.name not in names:
            continue
        times, value = _core.time_device("reduce", dev, repeats, warmup, True, v.index, OP_NAMES.index(op))
        err = abs(float(value) - ref) / max(abs(ref), 1e-300)
        ok = bool(value == exact) if host.dtype.kind != "f" else err <= 1e-3
        rows.append(Row(v.name, n, dtype, times, nbytes, ceiling, err, ok))
    if peers:
        timer = _flushing_timer(cupy, repeats, warmup)
        rows.append(Row("cupy", n, dtype, timer(lambda: getattr(cupy, op)(dev)), nbytes, ceiling,
                        note=f"cupy {cupy.__version__}"))
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None and torch.cuda.is_available():
            t = torch.as_tensor(dev, device="cuda")
            fn = {"sum": torch.sum, "prod": torch.prod, "min": torch.min, "max": torch.max}[op]
            rows.append(Row("torch", n, dtype, timer(lambda: fn(t)), nbytes, ceiling, note=f"torch {torch.__version__}"))
    return rows


def format_table(rows, title=""):
    """An aligned text table with Harris's two speed-up columns (over the previous row, over the first)."""
    head = ["variant", "median us", "min us", "GB/s", "% ceiling", "step x", "total x", "vs cub", "rel err", "ok"]
    cub = next((r.median_us for r in rows if r.variant == "cub"), None)
    lines = []
    prev = first = None
    for r in rows:
        med = r.median_us
        first = first or med
        cells = [
            r.variant, f"{med:.1f}", f"{r.min_us:.1f}", f"{r.gbps:.0f}",
            "" if r.pct_ceiling is None else f"{r.pct_ceiling:.0f}%",
            "" if prev is None else f"{prev / med:.2f}", f"{first / med:.2f}",
            "" if cub is None else f"{cub / med:.2f}",
            "" if r.error is None else f"{r.error:.1e}",
            "" if r.correct is None else ("yes" if r.correct else "NO"),
        ]
        lines.append(cells)
        prev = med
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    out = [title] if title else []
    out += [fmt(head), fmt(["-" * w for w in widths])] + [fmt(c) for c in lines]
    return "\n".join(out)
