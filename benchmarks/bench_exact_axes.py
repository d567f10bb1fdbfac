"""The variant "exact" along axes (issue 41) against auto's axis sums, in one process: row sums (axis 1: a warp a
row, long ones cut into chunks) and column sums (axis 0: a thread a column) of CuPy float32 and float64 matrices
of 2^24 or 2^26 elements in shapes from a few long rows to millions of short ones, typical data (normal) and
adversarial data (the full exponent range); "exact / auto" is the throughput ratio, as bench_exact.py's, and
"whole exact" the same elements summed as one array by the whole-array exact kernel (its rate of elements).

Timing: CUDA events around each call on CuPy's stream, the L2 flushed (256 MiB written) before each, median of
--repeat.  With --check, every exact result is compared bit for bit with gpureduce._bounds.exact_result (math.fsum
per slice, on the host: the smaller shapes only).

    python benchmarks/bench_exact_axes.py --log2 26 --json exact_axes.json
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from _common import commit
from bench_exact import full_range
from bench_segmented import SCRATCH_BYTES, timed


def shapes(n):
    """(rows, columns) of n elements: a few long rows to many short ones."""
    return [(4, n // 4), (64, n // 64), (1 << 12, n >> 12), (n >> 8, 256), (n >> 5, 32), (n >> 3, 8)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2", type=int, default=26)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--dtypes", default="float32,float64")
    parser.add_argument("--check", type=int, default=0, help="check exact's bits up to 2^CHECK elements")
    parser.add_argument("--json", default=None, help="write the rows there too")
    args = parser.parse_args(argv)
    import cupy as cp

    import gpureduce
    from gpureduce import _core
    from gpureduce._bounds import exact_result

    scratch = cp.empty(SCRATCH_BYTES // 4, cp.float32)
    rng = np.random.default_rng(41)
    name = _core.device_properties()["name"]
    n = 1 << args.log2
    rows_out = []
    print(f"# {name}, commit {commit()}: exact along axes against auto, us (median of {args.repeat}, L2 flushed)")
    print("| shape | axis | dtype | data | auto (us) | exact (us) | exact / auto | whole exact (us) | checked |")
    print("|---|---|---|---|---:|---:|---:|---:|---|")
    for dtype in args.dtypes.split(","):
        dt = np.dtype(dtype)
        for data in ("normal", "full range"):
            flat = (rng.standard_normal(n, dtype=np.float32).astype(dt) if data == "normal"
                    else full_range(rng, n, dt))
            d = cp.asarray(flat)  # "whole exact": the same elements as one array, the exact kernel's own rate
            whole = timed(cp, lambda: gpureduce.sum(d, variant="exact"), scratch, args.repeat)
            for shape in shapes(n):
                m = d.reshape(shape)
                for axis in (1, 0):
                    auto = timed(cp, lambda: gpureduce.sum(m, axis=axis), scratch, args.repeat)
                    exact = timed(cp, lambda: gpureduce.sum(m, axis=axis, variant="exact"), scratch, args.repeat)
                    checked = "-"
                    if args.check and n <= (1 << args.check):
                        got = cp.asnumpy(gpureduce.sum(m, axis=axis, variant="exact"))
                        want = exact_result("sum", flat.reshape(shape), dt, axis)
                        checked = "equal" if np.array_equal(got.view(f"u{dt.itemsize}"),
                                                            want.view(f"u{dt.itemsize}")) else "DIFFERENT"
                        if checked != "equal":
                            print(f"exact differs: {shape} axis {axis} {dtype} {data}", file=sys.stderr)
                    row = dict(shape=str(shape), axis=axis, dtype=dtype, data=data, auto_us=round(auto, 1),
                               exact_us=round(exact, 1), ratio=round(auto / exact, 2), whole_exact_us=round(whole, 1),
                               checked=checked)
                    rows_out.append(row)
                    print(f"| {shape} | {axis} | {dtype} | {data} | {auto:.1f} | {exact:.1f} | {auto / exact:.2f} | "
                          f"{whole:.1f} | {checked} |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": name, "commit": commit(), "log2": args.log2, "rows": rows_out}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
