"""A real host array larger than the GPU's memory, reduced by streaming it through the device (issue 13).

Makes an int8 NumPy array of 1.1x the device's memory (ones, with a few thousand fives at random places), then
checks gpureduce's sum, max, min, row sums and column sums (rows wider than a chunk: strip by strip) against the
values the construction fixes (exact integers, no NumPy pass over the array needed), times each call, and shows
that a call which would stage the whole array (argmax across the rows: its results do not combine chunk by
chunk) raises a MemoryError naming the size instead of failing on the device.
Needs a machine whose host memory is larger than its GPU's (an H100 node: 80 GB of GPU memory, 128 GiB of host
memory); elsewhere it says so and exits 0.

    python benchmarks/beyond_device_memory.py [--markdown PATH]
"""
import argparse
import os
import sys
import time

import numpy as np

import gpureduce
from gpureduce import _core

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import commit  # noqa: E402

ROWS = 1000


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", help="also write the report to this file")
    args = parser.parse_args()

    device_bytes = _core.memory_info()[1]
    host_bytes = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    n = int(device_bytes * 1.1) // ROWS * ROWS
    name = _core.device_properties()["name"]
    if n > 0.85 * host_bytes:
        print(f"{name}: {device_bytes / 2**30:.1f} GiB of device memory, {host_bytes / 2**30:.1f} GiB of host memory: "
              "no room for a host array larger than the device here")
        return 0

    rng = np.random.default_rng(13)
    made = time.perf_counter()
    a = np.ones(n, np.int8)
    fives = np.unique(rng.integers(0, n, 5000))
    a[fives] = 5
    made = time.perf_counter() - made
    width = n // ROWS
    row_sums = np.full(ROWS, width, np.int64) + 4 * np.bincount(fives // width, minlength=ROWS)
    column_sums = ROWS + 4 * np.bincount(fives % width, minlength=width)

    lines = [f"# A host array larger than the device: {name}", "",
             f"Commit {commit()}, `benchmarks/beyond_device_memory.py`: an int8 NumPy array of {n} bytes "
             f"({n / 2**30:.1f} GiB; the device has {device_bytes / 2**30:.1f} GiB, the host "
             f"{host_bytes / 2**30:.1f} GiB), ones with {fives.size} fives; made in {made:.1f} s.", "",
             "| call | result | expected | time | GB/s |", "|---|---:|---:|---:|---:|"]
    failed = 0
    m = a.reshape(ROWS, -1)
    for label, fn, want in [
        ("sum(a)", lambda: gpureduce.sum(a), n + 4 * fives.size),
        ("max(a)", lambda: gpureduce.max(a), 5),
        ("min(a)", lambda: gpureduce.min(a), 1),
        (f"sum(a.reshape({ROWS}, -1), axis=1)", lambda: gpureduce.sum(m, axis=1), row_sums),
        (f"sum(a.reshape({ROWS}, -1), axis=0)", lambda: gpureduce.sum(m, axis=0), column_sums),
    ]:
        got, seconds = timed(fn)
        ok = np.array_equal(np.asarray(got), np.asarray(want))
        failed += not ok
        shown = f"{int(np.asarray(got).sum())} (total)" if np.ndim(got) else str(got)
        wanted = f"{int(np.asarray(want).sum())} (total)" if np.ndim(want) else str(want)
        lines.append(f"| `{label}` | {shown}{'' if ok else ' FAIL'} | {wanted} | {seconds:.2f} s | "
                     f"{n / seconds / 1e9:.1f} |")
    try:
        gpureduce.argmax(m, axis=0)
        refused = "returned a result (unexpected: the whole array would not fit the device)"
        failed += 1
    except MemoryError as e:  # gpureduce.OutOfMemoryError (device) or MemoryError (a host copy) naming the size
        refused = f"{type(e).__name__}: {e}"
    lines += ["", f"`argmax(a.reshape({ROWS}, -1), axis=0)` (argmax does not combine chunk by chunk: staged "
              f"whole, not streamed): {refused}", "", f"Resources after: {_core.resource_stats()}"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
