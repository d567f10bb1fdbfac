"""Issue 41's batch-invariance probe: does a row's sum depend on the rows reduced beside it?

For each shape, a CuPy float32 matrix m of normal data is summed along its rows (axis 1) three ways:
  * the batch:   gpureduce.sum(m, axis=1)
  * sub-batches: gpureduce.sum(m[:k], axis=1) for k = 1 .. rows (up to 8 of them, spread), row by row against the batch
  * alone:       gpureduce.sum(m[i]) for the same rows, each a 1-D array
and the columns likewise (axis 0 of m.T's copy: m[:, :k] against m).  It prints, per variant, how many slices
differ bitwise from the batch's: 0 everywhere is what the issue asks of `auto`.

    PYTHONPATH=. python benchmarks/analysis/batch_invariance.py [--variants auto,cub]
"""
import argparse

import numpy as np

import gpureduce
from gpureduce import _core

SHAPES = [(4, 1 << 22), (16, 1 << 20), (1024, 4096), (1 << 16, 256), (1 << 20, 32)]


def spread(n, most=8):
    """Up to `most` counts from 1 to n, spread."""
    return sorted({max(1, round(n * (i + 1) / most)) for i in range(most)} | {1})


def probe(cp, m, variant):
    """(differing sub-batch rows, rows compared), (differing lone rows, rows compared) for the rows of m."""
    batch = cp.asnumpy(gpureduce.sum(m, axis=1, variant=variant))
    sub_diff = sub_all = 0
    for k in spread(m.shape[0]):
        part = cp.asnumpy(gpureduce.sum(m[:k], axis=1, variant=variant))
        sub_diff += int(np.count_nonzero(part.view(np.uint32) != batch[:k].view(np.uint32)))
        sub_all += k
    rows = spread(m.shape[0], 16)
    alone = np.array([cp.asnumpy(gpureduce.sum(m[i - 1], variant=variant)) for i in rows], dtype=m.dtype)
    lone_diff = int(np.count_nonzero(alone.view(np.uint32) != batch[[i - 1 for i in rows]].view(np.uint32)))
    return (sub_diff, sub_all), (lone_diff, len(rows))


def main():
    import cupy as cp
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default="auto,cub")
    args = parser.parse_args()
    rng = cp.random.default_rng(41)
    print(f"# {_core.device_properties()['name']}: float32 sums, slices differing bitwise from the batch's")
    print("| shape | over | variant | sub-batches differ | alone (1-D) differ |")
    print("|---|---|---|---:|---:|")
    for shape in SHAPES:
        m = rng.standard_normal(shape, dtype=cp.float32)
        t = cp.ascontiguousarray(m.T)  # columns of t are m's rows: the same values reduced along axis 0
        for variant in args.variants.split(","):
            (sd, sa), (ld, la) = probe(cp, m, variant)
            print(f"| {shape} | rows (axis 1) | {variant} | {sd} of {sa} | {ld} of {la} |")
            batch = cp.asnumpy(gpureduce.sum(t, axis=0, variant=variant))
            cd = ca = 0
            for k in spread(t.shape[1]):
                part = cp.asnumpy(gpureduce.sum(t[:, :k], axis=0, variant=variant))
                cd += int(np.count_nonzero(part.view(np.uint32) != batch[:k].view(np.uint32)))
                ca += k
            print(f"| {shape[::-1]} | columns (axis 0) | {variant} | {cd} of {ca} | |")


if __name__ == "__main__":
    main()
