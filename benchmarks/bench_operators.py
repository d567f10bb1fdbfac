"""Issue 15's operator table: each operator gpureduce added to NumPy's reduction family against CuPy's and
PyTorch's own function of the same name (where the library has one), on the same float32 CuPy array in one run,
cold L2 (bench_axis.py's Timer: a scratch write of at least 256 MiB before every call, CUDA events, median of
--repeat calls).

    python benchmarks/bench_operators.py [--log2 28] [--repeat 20] [--markdown FILE]
    (on the GPU machine, from benchmarks/: the results go to benchmarks/results/operators_h200.md)

Cases: the whole array, row reductions (axis 1) and column reductions (axis 0) of a square 2-D view of it.
Data: for any, all and count_nonzero zeros with one nonzero element in every 4096 (so neither any nor all has a
short answer); for the nan functions standard normal values with one NaN in every 4099 (no row or column of
NaNs only); for the rest standard normal values.  Columns: each library's median in µs ("-": it has no such function), gpureduce's GB/s and % of
the device's read ceiling (device_info()["read_gbps"]), and gpureduce / the faster peer.  Every gpureduce result
is checked against NumPy on a host copy: integer, bool and ptp results exactly; sums and means against NumPy
in float64, within 1e-5 of the sum (mean) of the magnitudes, what float32 accumulation in any order keeps; the
rest within 1e-4 relative of NumPy's float32 result.  A wrong one prints FAIL and the exit status is 1.
"""
from __future__ import annotations

import sys

import numpy as np

import gpureduce
from _common import commit, emit, table_arguments
from bench_axis import Timer, _stop_stream

# operator -> (data, PyTorch's own function or None); CuPy has a function of every name
OPS = {
    "any": ("sparse", lambda torch, t, dim: torch.any(t, **dim)),
    "all": ("sparse", lambda torch, t, dim: torch.all(t, **dim)),
    "count_nonzero": ("sparse", lambda torch, t, dim: torch.count_nonzero(t, **dim)),
    "ptp": ("normal", None),
    "var": ("normal", lambda torch, t, dim: torch.var(t, correction=0, **dim)),
    "std": ("normal", lambda torch, t, dim: torch.std(t, correction=0, **dim)),
    "nansum": ("nan", lambda torch, t, dim: torch.nansum(t, **dim)),
    "nanprod": ("nan", None),
    "nanmin": ("nan", None),
    "nanmax": ("nan", None),
    "nanmean": ("nan", lambda torch, t, dim: torch.nanmean(t, **dim)),
    "nanargmin": ("nan", None),
    "nanargmax": ("nan", None),
    "nanvar": ("nan", None),
    "nanstd": ("nan", None),
}


def make_data(cupy, kind, n):
    if kind == "sparse":
        x = cupy.zeros(n, dtype=cupy.float32)
        x[::4096] = 1.5
        return x
    x = cupy.random.default_rng(7).standard_normal(n, dtype=cupy.float32)
    if kind == "nan":
        x[7::4099] = cupy.nan
    return x


def correct(op, got, want, host, axis):
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if want.dtype.kind in "biu" or op == "ptp":
        return np.array_equal(got, want, equal_nan=True)
    if op in ("nansum", "nanmean"):  # cancellation: the error scales with the magnitudes, not the result
        wide = host.astype(np.float64)
        exact = getattr(np, op)(wide, axis=axis)
        scale = getattr(np, op)(np.abs(wide), axis=axis)
        return bool(np.all(np.abs(got - exact) <= 1e-5 * scale))
    return np.allclose(got, want, rtol=1e-4, atol=0, equal_nan=True)


def main():
    args = table_arguments(__doc__)
    import cupy
    try:
        import torch
    except ImportError:
        torch = None
    n = 1 << args.log2
    side = 1 << (args.log2 // 2)
    timer = Timer(cupy)
    timer.warm_clocks()
    read_gbps = gpureduce.device_info()["read_gbps"]
    title = f"# NumPy's reduction family on 2^{args.log2} float32 (benchmarks/bench_operators.py, commit {commit()})"
    lines = [title,
             "", f"Read ceiling {read_gbps:.0f} GB/s; medians in µs of {args.repeat} cold-L2 calls.", "",
             "| op | case | gpureduce | cupy | torch | GB/s | % read ceiling | gr / best peer | correct |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    wrong = False
    data = {}
    for op in OPS:
        kind, torch_fn = OPS[op]
        if kind not in data:
            data.clear()  # one array on the device at a time
            flat = make_data(cupy, kind, n)
            data[kind] = (flat, flat.get())
        flat, host = data[kind]
        grid = flat.reshape(n // side, side)
        cases = [("whole", flat, host, None), ("rows (axis 1)", grid, host.reshape(grid.shape), 1),
                 ("columns (axis 0)", grid, host.reshape(grid.shape), 0)]
        for label, x, hx, axis in cases:
            with np.errstate(all="ignore"):
                want = getattr(np, op)(hx, axis=axis)
            fns = {"gpureduce": lambda: getattr(gpureduce, op)(x, axis=axis),
                   "cupy": lambda: getattr(cupy, op)(x, axis=axis)}
            if torch is not None and torch_fn is not None:
                tx = torch.from_dlpack(x)
                dim = {} if axis is None else {"dim": axis}
                fns["torch"] = lambda: torch_fn(torch, tx, dim)
            med, ok = {}, True
            for name, fn in fns.items():
                out = fn()
                if name == "gpureduce":
                    got = out.get() if hasattr(out, "get") else out
                    ok = correct(op, got, want, hx, axis)
                times = timer(fn, _stop_stream(cupy, out, timer.stream), args.repeat, 3)
                med[name] = float(np.median(times))
                del out
            wrong |= not ok
            gbps = n * 4 / (med["gpureduce"] * 1e-6) / 1e9
            best = min(v for k, v in med.items() if k != "gpureduce")
            torch_cell = f"{med['torch']:.1f}" if "torch" in med else "-"
            lines.append(f"| {op} | {label} | {med['gpureduce']:.1f} | {med['cupy']:.1f} | {torch_cell} | "
                         f"{gbps:.0f} | {100 * gbps / read_gbps:.1f} | {med['gpureduce'] / best:.2f} | "
                         f"{'yes' if ok else 'FAIL'} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines)
    emit(text, args.markdown)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
