"""Is `auto` never slower than CUB by more than a few percent?  auto vs cub (with the ceiling, CuPy,
PyTorch) across sizes and dtypes, for reductions and scans, all in one run on the same arrays.

    python benchmarks/bench_auto_vs_cub.py [--ops sum,max,cumsum] [--dtypes float32,int32,float64]
"""
import argparse

from gpureduce import variants
from gpureduce.benchmark import OPERATORS, benchmark, parse_sizes


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--ops", default="sum,max,cumsum")
    p.add_argument("--dtypes", default="float32,int32,float64")
    p.add_argument("--sizes", default="2^10:2^28:2")
    p.add_argument("--repeat", type=int, default=30)
    args = p.parse_args()
    print(f"{'op':7} {'dtype':8} {'n':>10} {'ceiling':>8} {'auto us':>8} {'cub us':>8} {'auto/cub':>8} "
          f"{'cupy us':>8} {'torch us':>8} {'auto GB/s':>9} {'%ceil':>6}")
    worst = (0.0, "")
    for op in args.ops.split(","):
        if not variants(kind=OPERATORS[op][0]):
            continue
        for dtype in args.dtypes.split(","):
            result = benchmark(op, ["auto"], parse_sizes(args.sizes), dtype, args.repeat, progress=False)
            for n in sorted({r.n for r in result}):
                at = {r.variant: r for r in result if r.n == n}
                auto, cub = at["auto"], at["cub"]
                ceiling_us = auto.median_us * auto.pct_ceiling / 100
                ratio = auto.median_us / cub.median_us
                worst = max(worst, (ratio, f"{op} {dtype} n={n}"))
                peer = lambda name: f"{at[name].median_us:8.1f}" if name in at else f"{'-':>8}"
                print(f"{op:7} {dtype:8} {n:>10} {ceiling_us:8.1f} {auto.median_us:8.1f} {cub.median_us:8.1f} "
                      f"{ratio:8.2f} {peer('cupy')} {peer('torch')} {auto.gbps:9.0f} {auto.pct_ceiling:5.0f}%")
    print(f"worst auto/cub: {worst[0]:.2f} ({worst[1]})")


if __name__ == "__main__":
    main()
