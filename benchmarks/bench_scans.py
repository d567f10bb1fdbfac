"""Issue 14's scan table: the single-pass scans at one size (2^28 by default) next to CUB, PyTorch and CuPy,
all on the same device arrays in one run (cold L2, gpureduce.benchmark's timing and checks).

    python benchmarks/bench_scans.py [--log2 28] [--markdown benchmarks/results/scans_h200.md]

Rows: float32, float64 and int64 cumsum, and int32 cumsum (whose result is int64, as NumPy's).  Columns: each
scan variant that reads the input once or twice, `auto`, CUB, the peers, and the copy ceiling (the time to read
the input and write the result at the device's measured bandwidth).  Each cell is the median time in µs; `det`
says whether `auto`'s two extra calls gave bitwise the same result; a wrong result prints FAIL.
"""
from __future__ import annotations

import sys

from gpureduce import benchmark
from _common import commit, emit, table_arguments

VARIANTS = ("reduce_then_scan", "decoupled_lookback", "ordered_lookback", "lookahead", "pipelined", "auto")
PEERS = ("cub", "torch", "cupy")
CASES = ("float32", "float64", "int64", "int32")


def cell(row):
    if row is None:
        return "-"
    return f"{row.median_us:.0f}" + ("" if row.correct in (None, True) else " FAIL")


def main():
    args = table_arguments(__doc__)
    n = 1 << args.log2
    lines = [f"# Scans at n = 2^{args.log2} (benchmarks/bench_scans.py, commit {commit()})", "",
             "| cumsum | " + " | ".join(VARIANTS + PEERS) + " | copy ceiling | auto/CUB | auto det. |",
             "|---" * (len(VARIANTS) + len(PEERS) + 4) + "|"]
    wrong = False
    for dtype in CASES:
        result = benchmark("cumsum", list(VARIANTS), [n], dtype, args.repeat, progress=False)
        at = {r.variant: r for r in result if r.n == n}
        auto, cub = at.get("auto"), at.get("cub")
        wrong |= any(r.correct is False for r in at.values())
        ceiling = auto.median_us * auto.pct_ceiling / 100 if auto and auto.pct_ceiling else float("nan")
        ratio = f"{auto.median_us / cub.median_us:.2f}" if auto and cub else "-"
        label = "int32 -> int64" if dtype == "int32" else dtype
        lines.append(f"| {label} | " + " | ".join(cell(at.get(v)) for v in VARIANTS + PEERS)
                     + f" | {ceiling:.0f} | {ratio} | {'yes' if auto and auto.deterministic else 'NO'} |")
    text = "\n".join(lines)
    emit(text, args.markdown)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
