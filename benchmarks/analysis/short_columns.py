"""auto's sums along axis 0 of wide matrices with few rows -- (4, 2^24) and the like: a few channels of many
samples, summed per sample -- against CuPy's and PyTorch's, in one process.  Found by bench_exact_axes.py: auto
took 1,180 us for (4, 2^24) float32 (227 GB/s) where exact's thread-per-column kernel took 404.

Timing: CUDA events on CuPy's stream around each call (torch on the same stream), the L2 flushed before each,
medians of --repeat; GB/s counts the input and the result once.

    PYTHONPATH=. python benchmarks/analysis/short_columns.py [--repeat 10] [--rows 2,33,64] [--dtypes float32]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

from bench_segmented import SCRATCH_BYTES, timed  # noqa: E402

SHAPES = [(2, 1 << 25), (4, 1 << 24), (8, 1 << 23), (16, 1 << 22), (32, 1 << 21), (33, 1 << 20), (64, 1 << 20)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--rows", default=None, help="rows of each shape (2^26 elements in all), else SHAPES")
    parser.add_argument("--dtypes", default="float32,float64,int32")
    args = parser.parse_args()
    shapes = SHAPES if not args.rows else [(r, (1 << 26) // r) for r in map(int, args.rows.split(","))]
    import cupy as cp

    import gpureduce
    from gpureduce import _core
    try:
        import torch
    except ImportError:
        torch = None
    scratch = cp.empty(SCRATCH_BYTES // 4, cp.float32)
    print(f"# {_core.device_properties()['name']}: sum along axis 0, us (median of {args.repeat}, L2 flushed)")
    print("| shape | dtype | gpureduce | GB/s | cupy | torch | equal to NumPy's within rounding |")
    print("|---|---|---:|---:|---:|---:|---|")
    for dtype in args.dtypes.split(","):
        for shape in shapes:
            m = cp.asarray(np.random.default_rng(7).standard_normal(shape).astype(dtype) if dtype != "int32" else
                           np.random.default_rng(7).integers(-1000, 1000, shape, dtype=np.int32))
            ours = timed(cp, lambda: gpureduce.sum(m, axis=0), scratch, args.repeat)
            theirs = timed(cp, lambda: m.sum(axis=0), scratch, args.repeat)
            t = torch.as_tensor(m, device="cuda") if torch is not None else None
            torch_us = timed(cp, lambda: t.sum(dim=0), scratch, args.repeat) if t is not None else float("nan")
            got = cp.asnumpy(gpureduce.sum(m, axis=0))
            want = cp.asnumpy(m).sum(axis=0, dtype=np.float64 if dtype != "int32" else np.int64)
            ok = np.allclose(got, want, rtol=1e-5 if dtype == "float32" else 1e-12, atol=1e-3)
            gbs = (m.nbytes + got.nbytes) / ours / 1e3
            print(f"| {shape} | {dtype} | {ours:.1f} | {gbs:.0f} | {theirs:.1f} | {torch_us:.1f} | {ok} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
