"""Segmented reductions (issue 40): gpureduce.segmented_reduce over four range-length distributions against
CUB's DeviceSegmentedReduce (sum and max, through CCCL's own Python, cuda.compute.make_segmented_reduce, where
cuda-cccl is installed: CUB's kernels compiled by NVRTC, called with their temporary storage allocated once),
torch.segment_reduce, PyTorch's index_add_ over segment ids (sums), Awkward Array's reducers on its CUDA backend
(ak.sum / ak.max / ak.argmax along the ragged axis, CUB's segmented reduction under Awkward's Python; where awkward,
awkward-cuda-kernels and CCCL's cuda.compute are installed) and NumPy's reduceat on the host, all on the same data in one process.

    python benchmarks/bench_segmented.py --out benchmarks/results       # on the GPU machine
    python benchmarks/bench_segmented.py --log2 24 --repeat 10 --ops sum --variants

Distributions over n = 2^--log2 elements (contiguous ranges covering the array, CSR offsets):
  tiny      lengths uniform in 1..16
  thousand  lengths uniform in 900..1100
  million   lengths 2^20 (n / 2^20 ranges: 64 at 2^26)
  power     lengths ~ 1 + 4 * Pareto(1.2), clipped to n: many tiny ranges, a few huge ones
Each call is timed with CUDA events on CuPy's current stream, a 256 MiB scratch buffer written before every call
(cold L2), warm-up calls first (first-use compilation included there), then the median of --repeat calls.
"GB/s" counts the bytes that must move: the input, the offsets (8 bytes a bound) and the results; "% read" is that
over the device's measured read bandwidth (gpureduce.device_info()["read_gbps"]).  Every result is checked against
a float64 reference (sums: max |error| / sum |x| over a range < 1e-5; max and argmax exactly).
torch.segment_reduce takes floating data only and has no argmax; index_add_ sums only ("n/a" otherwise).  Awkward's
max and argmax are called with mask_identity=False (no mask built for empty lists), as gpureduce's answer.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys

import numpy as np

from _common import commit, save_table, timing_cell

DISTRIBUTIONS = ("tiny", "thousand", "million", "power")
SCRATCH_BYTES = 256 << 20


def lengths_of(kind, n, rng):
    if kind == "tiny":
        lengths = rng.integers(1, 17, size=n // 8 + 16)
    elif kind == "thousand":
        lengths = rng.integers(900, 1101, size=n // 1000 + 16)
    elif kind == "million":
        lengths = np.full(max(1, n >> 20), 1 << 20)
    else:
        lengths = (rng.pareto(1.2, size=n // 20 + 16) * 4).astype(np.int64) + 1
    ends = np.minimum(np.cumsum(lengths), n)
    ends = ends[: np.searchsorted(ends, n) + 1]
    ends[-1] = n
    return np.concatenate([[0], ends]).astype(np.int64)


def timed(cp, fn, scratch, repeat, warmup=3):
    for _ in range(warmup):
        fn()
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(repeat):
        scratch.fill(1)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2", type=int, default=26)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--ops", default="sum,max,argmax")
    parser.add_argument("--dtypes", default="float32,int64")
    parser.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    parser.add_argument("--variants", action="store_true", help="also time every gpureduce variant")
    parser.add_argument("--numpy", action="store_true", help="also time NumPy's reduceat on the host")
    parser.add_argument("--out", help="write segmented_<gpu>.md and .json there")
    args = parser.parse_args(argv)
    try:
        import cupy as cp
    except ImportError:
        print("bench_segmented: needs CuPy and a GPU", file=sys.stderr)
        return 1
    import gpureduce
    try:
        import torch
    except ImportError:
        torch = None
    try:
        import awkward as ak
        import awkward_cuda_kernels  # noqa: F401  (Awkward's reducers on the GPU: its kernels, and CUB's
        import cuda.compute  # noqa: F401          segmented reduction through CCCL's cuda.compute)
    except ImportError:
        ak = None
    try:
        import cuda.compute as cub  # CCCL's Python: CUB's algorithms
    except ImportError:
        cub = None
    info = gpureduce.device_info()
    read_gbps = info.get("read_gbps") or float("nan")
    rng = np.random.default_rng(0)
    n = 1 << args.log2
    scratch = cp.empty(SCRATCH_BYTES, dtype=cp.uint8)
    variants = list(gpureduce.segmented_variants()) if args.variants else ["auto"]
    rows, failed = [], 0
    for dtype in args.dtypes.split(","):
        host = (rng.standard_normal(n) * 100).astype(dtype) if dtype.startswith("float") else \
            rng.integers(-1000, 1000, n).astype(dtype)
        x = cp.asarray(host)
        t = torch.from_dlpack(x) if torch is not None else None
        for kind in args.distributions.split(","):
            offsets = lengths_of(kind, n, rng)
            starts, stops = offsets[:-1], offsets[1:]
            k = len(starts)
            d_starts, d_stops = cp.asarray(starts), cp.asarray(stops)
            lengths_t = torch.from_dlpack(cp.asarray(stops - starts)) if t is not None else None
            ids_t = torch.repeat_interleave(torch.arange(k, device="cuda"), lengths_t) if t is not None else None
            ragged = None
            if ak is not None:  # the same buffers as a ragged array on Awkward's CUDA backend
                ragged = ak.Array(ak.contents.ListOffsetArray(ak.index.Index64(cp.asarray(offsets)),
                                                              ak.contents.NumpyArray(x)))
            for op in args.ops.split(","):
                moved = n * host.itemsize + 16 * k + k * (8 if op == "argmax" else host.itemsize)
                row = {"dtype": dtype, "distribution": kind, "op": op, "segments": k, "n": n}
                ref = None
                if op == "sum":
                    ref = np.add.reduceat(host.astype(np.float64), starts)
                    scale = np.add.reduceat(np.abs(host.astype(np.float64)), starts)
                elif op == "max":
                    ref = np.maximum.reduceat(host, starts)
                for v in variants:
                    name = "gpureduce" if v == "auto" else f"gpureduce[{v}]"
                    call = lambda v=v: gpureduce.segmented_reduce(op, x, d_starts, d_stops, variant=v)  # noqa: E731
                    got = cp.asnumpy(call())
                    if op == "sum":
                        ok = bool(np.all(np.abs(got - ref) <= 1e-5 * scale + 1e-30))
                    elif op == "max":
                        ok = bool(np.array_equal(got, ref))
                    else:
                        ok = all(int(got[i]) == int(np.argmax(host[starts[i]:stops[i]]))
                                 for i in rng.integers(0, k, 200))
                    failed += not ok
                    row[name] = timed(cp, call, scratch, args.repeat)
                    row[name + " ok"] = ok
                if cub is not None and op in ("sum", "max"):
                    found = cp.empty(k, dtype=x.dtype)
                    cub_op = cub.OpKind.PLUS if op == "sum" else cub.OpKind.MAXIMUM
                    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
                    init = np.array([0 if op == "sum" else lowest], dtype=x.dtype)
                    parts = dict(d_in=x, d_out=found, start_offsets_in=d_starts, end_offsets_in=d_stops, h_init=init)
                    reducer = cub.make_segmented_reduce(op=cub_op, **parts)
                    storage = cp.empty(max(1, reducer(temp_storage=None, num_segments=k, op=cub_op, **parts)), cp.uint8)
                    run_cub = lambda: reducer(temp_storage=storage, num_segments=k, op=cub_op, **parts)  # noqa: E731
                    run_cub()
                    got = cp.asnumpy(found)
                    ok = bool(np.all(np.abs(got - ref) <= 1e-5 * scale + 1e-30)) if op == "sum" else \
                        bool(np.array_equal(got, ref))
                    failed += not ok
                    row["CUB DeviceSegmentedReduce"] = timed(cp, run_cub, scratch, args.repeat)
                    row["CUB DeviceSegmentedReduce ok"] = ok
                if t is not None and dtype.startswith("float") and op in ("sum", "max"):
                    row["torch.segment_reduce"] = timed(
                        cp, lambda: torch.segment_reduce(t, op, lengths=lengths_t), scratch, args.repeat)
                if t is not None and op == "sum":
                    def index_add():
                        return torch.zeros(k, dtype=t.dtype, device="cuda").index_add_(0, ids_t, t)
                    row["torch index_add_"] = timed(cp, index_add, scratch, args.repeat)
                if ragged is not None:
                    func = getattr(ak, op)
                    kwargs = {"axis": -1} if op == "sum" else {"axis": -1, "mask_identity": False}
                    try:
                        func(ragged, **kwargs)
                        row["awkward (cuda)"] = timed(cp, lambda: func(ragged, **kwargs), scratch, args.repeat)
                    except Exception as e:  # a dtype or operator its CUDA kernels lack
                        print(f"awkward {op} {dtype}: {type(e).__name__}: {e}", file=sys.stderr)
                if args.numpy and op in ("sum", "max"):
                    import time
                    ufunc = np.add if op == "sum" else np.maximum
                    t0 = time.perf_counter()
                    ufunc.reduceat(host, starts)
                    row["numpy reduceat (host)"] = (time.perf_counter() - t0) * 1e6
                row["% read"] = 100 * moved / (row["gpureduce"] * 1e-6) / (read_gbps * 1e9)
                rows.append(row)
                print(json.dumps({key: (round(val, 1) if isinstance(val, float) else val) for key, val in row.items()}),
                      flush=True)
    peers = ["CUB DeviceSegmentedReduce", "torch.segment_reduce", "torch index_add_", "awkward (cuda)",
             "numpy reduceat (host)"]
    names = ["gpureduce"] + [f"gpureduce[{v}]" for v in variants if v != "auto"]
    header = ["dtype", "op", "lengths", "segments"] + [f"{c} (us)" for c in names + peers] + ["% read", "gr / best peer"]
    lines = [f"Segmented reductions on {info.get('name', '?')}, n = 2^{args.log2}, medians of {args.repeat}, cold L2; "
             f"commit {commit()}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        best = min((r[p] for p in peers[:4] if p in r), default=None)
        cells = [r["dtype"], r["op"], r["distribution"], str(r["segments"])]
        cells += [timing_cell(r, c) for c in names + peers]
        cells += [f"{r['% read']:.0f}%", f"{r['gpureduce'] / best:.2f}" if best else "n/a"]
        lines.append("| " + " | ".join(cells) + " |")
    save_table(args.out, "segmented", info, "\n".join(lines), rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
