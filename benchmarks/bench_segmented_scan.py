"""Segmented scans (issue 40): gpureduce.segmented_scan ("sum", a cumsum restarting at every range) over the four
range-length distributions of bench_segmented.py, and gpureduce.groupby_scan over unsorted ids, against what a
CuPy or PyTorch user writes today and against CUB's scan-by-key where the ranges are equal (all in one process):

  gpureduce cumsum (whole)  gpureduce.cumsum of the same array: the same bytes, no restarts (the ceiling)
  CuPy cumsum - offsets     cp.cumsum, then each range's prefix subtracted (cp.repeat of the sums before each
                            range): the usual trick, three passes, and not exact in floating point (a range's sum is
                            a difference of two large prefixes)
  torch cumsum - offsets    the same trick in PyTorch (torch.repeat_interleave)
  CUB scan-by-key           CUB's DeviceScan::InclusiveScanByKey over rows (gpureduce.cumsum(a.reshape(K, L),
                            axis=1, variant="cub")): only where every range has one length ("million")
  groupby_scan              unsorted ids, one per range of the distribution shuffled over the array: the stable
                            sort of the ids, the gather, the segmented scan and the scatter, against PyTorch's
                            argsort + gather + cumsum - offsets + scatter (the same steps, the trick's scan)

    python benchmarks/bench_segmented_scan.py --out benchmarks/results      # on the GPU machine
    python benchmarks/bench_segmented_scan.py --log2 24 --repeat 10 --variants

Timing as bench_segmented.py (CUDA events on CuPy's stream, cold L2, medians); "% read" counts the input read and
the result written over the device's measured read bandwidth (gpureduce.device_info()["read_gbps"]).  Every
result is checked against a float64 reference (|error| <= 1e-5 x the running sum of |x|; integers exactly).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from _common import commit, save_table, timing_cell
from bench_segmented import DISTRIBUTIONS, SCRATCH_BYTES, lengths_of, timed


def reference(host, offsets):
    """Each range's cumsum (exact for integers; for floats the difference of two long-double prefixes of the whole
    array, good to about 1e-13 here), and the running sum of |x| that bounds a float result's error."""
    wide = host.astype(np.longdouble) if host.dtype.kind == "f" else host.astype(np.int64)
    total = np.cumsum(wide)
    before = np.repeat(np.concatenate([[0], total])[offsets[:-1]], np.diff(offsets))
    scale = np.cumsum(np.abs(host.astype(np.float64)))
    scale = scale - np.repeat(np.concatenate([[0.0], scale])[offsets[:-1]], np.diff(offsets))
    return total - before, scale


def close(got, ref, scale):
    """Integers exactly; floats within 1e-5 of the running sum of |x| (and 1e-9 absolute: the reference's own
    error, for the elements near zero that start a range)."""
    if ref.dtype.kind != "f":
        return bool(np.array_equal(got, ref))
    return bool(np.all(np.abs(got.astype(np.longdouble) - ref) <= 1e-5 * scale + 1e-9))


def scattered(offsets, n, rng):
    """Positions of the ranges' elements scattered over the array, each range's still in ascending order (so that
    a group's running scan in array order is its range's scan): perm[i] is element i's new place."""
    keys = np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))
    perm = np.sort(keys * n + rng.permutation(n)) % n
    return keys, perm


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--log2", type=int, default=26)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--dtypes", default="float32,int64")
    parser.add_argument("--distributions", default=",".join(DISTRIBUTIONS))
    parser.add_argument("--variants", action="store_true", help="also time every gpureduce variant")
    parser.add_argument("--grouped", default="tiny,thousand,power",
                        help="the distributions whose groupby_scan is timed (ids scattered over the array)")
    parser.add_argument("--out", help="write segmented_scan_<gpu>.md and .json there")
    args = parser.parse_args(argv)
    try:
        import cupy as cp
    except ImportError:
        print("bench_segmented_scan: needs CuPy and a GPU", file=sys.stderr)
        return 1
    import gpureduce
    try:
        import torch
    except ImportError:
        torch = None
    info = gpureduce.device_info()
    read_gbps = info.get("read_gbps") or float("nan")
    rng = np.random.default_rng(0)
    n = 1 << args.log2
    scratch = cp.empty(SCRATCH_BYTES, dtype=cp.uint8)
    from gpureduce._planning.ranges import SCAN_ALGORITHM_DOCS
    variants = list(SCAN_ALGORITHM_DOCS) if args.variants else ["auto"]
    rows, failed = [], 0
    layouts = {kind: lengths_of(kind, n, rng) for kind in args.distributions.split(",")}
    grouped = {kind: scattered(layouts[kind], n, rng) for kind in args.grouped.split(",") if kind in layouts}
    for dtype in args.dtypes.split(","):
        host = (rng.standard_normal(n) * 100).astype(dtype) if dtype.startswith("float") else \
            rng.integers(-1000, 1000, n).astype(dtype)
        x = cp.asarray(host)
        t = torch.from_dlpack(x) if torch is not None else None
        for kind in args.distributions.split(","):
            offsets = layouts[kind]
            starts, stops = offsets[:-1], offsets[1:]
            k = len(starts)
            d_starts, d_stops = cp.asarray(starts), cp.asarray(stops)
            ref, scale = reference(host, offsets)
            row = {"dtype": dtype, "distribution": kind, "segments": k, "n": n}
            moved = 2 * n * host.itemsize  # read and written (the bounds, 16 bytes a range, are not counted)
            for v in variants:
                name = "gpureduce" if v == "auto" else f"gpureduce[{v}]"
                call = lambda v=v: gpureduce.segmented_scan("sum", x, d_starts, d_stops, variant=v)  # noqa: E731
                ok = close(cp.asnumpy(call()), ref, scale)
                failed += not ok
                row[name] = timed(cp, call, scratch, args.repeat)
                row[name + " ok"] = ok
            row["gpureduce cumsum (whole)"] = timed(cp, lambda: gpureduce.cumsum(x), scratch, args.repeat)
            d_offsets, d_lengths = cp.asarray(offsets), cp.asarray(np.diff(offsets))
            positions = cp.arange(n)

            def cupy_trick():  # cp.repeat takes host repeats only: each element's range by a binary search
                total = cp.cumsum(x)
                prefix = cp.concatenate([cp.zeros(1, total.dtype), total])[d_offsets[:-1]]
                return total - prefix[cp.searchsorted(d_offsets, positions, side="right") - 1]
            ok = close(cp.asnumpy(cupy_trick()), ref, scale)
            row["CuPy cumsum - offsets"] = timed(cp, cupy_trick, scratch, args.repeat)
            row["CuPy cumsum - offsets ok"] = ok
            if t is not None:
                t_offsets = torch.from_dlpack(d_offsets)
                t_lengths = torch.from_dlpack(d_lengths)

                def torch_trick():
                    total = torch.cumsum(t, 0)
                    prefix = torch.cat([total.new_zeros(1), total])[t_offsets[:-1]]
                    return total - torch.repeat_interleave(prefix, t_lengths, output_size=n)
                ok = close(torch_trick().cpu().numpy(), ref, scale)
                row["torch cumsum - offsets"] = timed(cp, torch_trick, scratch, args.repeat)
                row["torch cumsum - offsets ok"] = ok
            if kind == "million":  # equal lengths: rows, CUB's scan-by-key along them
                rows_2d = x.reshape(k, n // k)
                by_key = lambda: gpureduce.cumsum(rows_2d, axis=1, variant="cub")  # noqa: E731
                ok = close(cp.asnumpy(by_key()).reshape(-1), ref, scale)
                row["CUB scan-by-key"] = timed(cp, by_key, scratch, args.repeat)
                row["CUB scan-by-key ok"] = ok
            if kind in grouped:
                # groupby_scan: one id per range, the ranges' elements scattered over the array
                keys, perm = grouped[kind]
                ids_host = np.empty(n, np.int64)
                ids_host[perm] = keys
                shuffled = np.empty_like(host)
                shuffled[perm] = host
                d_ids, d_shuffled = cp.asarray(ids_host), cp.asarray(shuffled)
                by_ids = lambda: gpureduce.groupby_scan("sum", d_shuffled, d_ids)  # noqa: E731
                got = cp.asnumpy(by_ids())
                ok = close(got[perm], ref, scale)  # position perm[i] holds element i of the ranges' order
                failed += not ok
                row["groupby_scan"] = timed(cp, by_ids, scratch, args.repeat)
                row["groupby_scan ok"] = ok
                if t is not None:
                    t_ids, t_shuffled = torch.from_dlpack(d_ids), torch.from_dlpack(d_shuffled)

                    def torch_grouped():
                        order = torch.argsort(t_ids, stable=True)
                        sorted_ids = t_ids[order]
                        total = torch.cumsum(t_shuffled[order], 0)
                        heads = torch.ones(n, dtype=torch.bool, device="cuda")
                        heads[1:] = sorted_ids[1:] != sorted_ids[:-1]
                        head_at = torch.cummax(torch.where(heads, torch.arange(n, device="cuda"), 0), 0).values
                        before = torch.cat([total.new_zeros(1), total])[head_at]
                        return torch.empty_like(total).index_copy_(0, order, total - before)
                    ok = close(torch_grouped().cpu().numpy()[perm], ref, scale)
                    row["torch sort + cumsum - offsets"] = timed(cp, torch_grouped, scratch, args.repeat)
                    row["torch sort + cumsum - offsets ok"] = ok
            row["% read"] = 100 * moved / (row["gpureduce"] * 1e-6) / (read_gbps * 1e9)
            rows.append(row)
            print(json.dumps({key: (round(val, 1) if isinstance(val, float) else val) for key, val in row.items()}),
                  flush=True)
    ranges_peers = ["CuPy cumsum - offsets", "torch cumsum - offsets", "CUB scan-by-key"]
    names = ["gpureduce"] + [f"gpureduce[{v}]" for v in variants if v != "auto"]
    columns = names + ["gpureduce cumsum (whole)"] + ranges_peers + ["groupby_scan", "torch sort + cumsum - offsets"]
    header = ["dtype", "lengths", "segments"] + [f"{c} (us)" for c in columns] + ["% read", "gr / best peer"]
    lines = [f"Segmented scans (cumsum) on {info.get('name', '?')}, n = 2^{args.log2}, medians of {args.repeat}, "
             f"cold L2; commit {commit()}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        best = min((r[p] for p in ranges_peers if p in r), default=None)
        cells = [r["dtype"], r["distribution"], str(r["segments"])]
        cells += [timing_cell(r, c) for c in columns]
        cells += [f"{r['% read']:.0f}%", f"{r['gpureduce'] / best:.2f}" if best else "n/a"]
        lines.append("| " + " | ".join(cells) + " |")
    save_table(args.out, "segmented_scan", info, "\n".join(lines), rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
