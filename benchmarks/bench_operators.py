"""Issue 15's operator table: gpureduce's any, all and count_nonzero against CuPy's and PyTorch's own functions,
on the same float32 CuPy array in one run, cold L2 (bench_axis.py's Timer: a scratch write of at least 256 MiB
before every call, CUDA events, median of --repeat calls).

    python benchmarks/bench_operators.py [--log2 28] [--repeat 20] [--markdown FILE]
    (on the GPU machine, from benchmarks/: the results go to benchmarks/results/operators_h200.md)

Cases: the whole array, row reductions (axis 1) and column reductions (axis 0) of a 2-D view of it.  The data
is zeros with one nonzero element in every 4096 (so neither any nor all has a short answer).  Columns: each
library's median in µs, gpureduce's GB/s and % of the device's read ceiling (device_info()["read_gbps"]),
and gpureduce / the faster peer.  Every result is checked against NumPy on a host copy; a wrong one prints FAIL
and the exit status is 1.
"""
from __future__ import annotations

import sys

import numpy as np

import gpureduce
from _common import commit, emit, table_arguments
from bench_axis import Timer, _stop_stream

OPS = ("any", "all", "count_nonzero")


def peers(cupy, torch, op, x, t, axis):
    fns = {"cupy": lambda: getattr(cupy, op)(x, axis=axis)}
    if torch is not None:
        dim = {} if axis is None else {"dim": axis}
        fns["torch"] = lambda: getattr(torch, op)(t, **dim)
    return fns


def main():
    args = table_arguments(__doc__)
    import cupy
    try:
        import torch
    except ImportError:
        torch = None
    n = 1 << args.log2
    side = 1 << (args.log2 // 2)
    flat = cupy.zeros(n, dtype=cupy.float32)
    flat[::4096] = 1.5
    host = flat.get()
    t = torch.from_dlpack(flat) if torch is not None else None
    timer = Timer(cupy)
    timer.warm_clocks()
    read_gbps = gpureduce.device_info()["read_gbps"]
    grid = flat.reshape(n // side, side)
    tgrid = t.reshape(grid.shape) if t is not None else None
    cases = [("whole", flat, t, host, None), ("rows (axis 1)", grid, tgrid, host.reshape(grid.shape), 1),
             ("columns (axis 0)", grid, tgrid, host.reshape(grid.shape), 0)]
    title = f"# any, all, count_nonzero of 2^{args.log2} float32 (benchmarks/bench_operators.py, commit {commit()})"
    lines = [title,
             "", f"Read ceiling {read_gbps:.0f} GB/s; medians in µs of {args.repeat} cold-L2 calls.", "",
             "| op | case | gpureduce | cupy | torch | GB/s | % read ceiling | gr / best peer | correct |",
             "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    wrong = False
    for op in OPS:
        for label, x, tx, hx, axis in cases:
            want = getattr(np, op)(hx, axis=axis)
            fns = {"gpureduce": lambda: getattr(gpureduce, op)(x, axis=axis)}
            fns.update(peers(cupy, torch, op, x, tx, axis))
            med, ok = {}, True
            for name, fn in fns.items():
                out = fn()
                got = out.get() if hasattr(out, "get") else (out.cpu().numpy() if hasattr(out, "cpu") else out)
                if name == "gpureduce":
                    ok = np.array_equal(np.asarray(got), want) and np.asarray(got).dtype == np.asarray(want).dtype
                times = timer(fn, _stop_stream(cupy, out, timer.stream), args.repeat, 3)
                med[name] = float(np.median(times))
                del out
            wrong |= not ok
            gbps = n * 4 / (med["gpureduce"] * 1e-6) / 1e9
            best = min(v for k, v in med.items() if k != "gpureduce")
            lines.append(f"| {op} | {label} | {med['gpureduce']:.1f} | {med['cupy']:.1f} | "
                         f"{med.get('torch', float('nan')):.1f} | {gbps:.0f} | {100 * gbps / read_gbps:.1f} | "
                         f"{med['gpureduce'] / best:.2f} | {'yes' if ok else 'FAIL'} |")
    text = "\n".join(lines)
    emit(text, args.markdown)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
