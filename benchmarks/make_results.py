"""Produce benchmarks/results/<gpu>.md: sum and cumsum tables over float32 / int32 / float64 at
2^10..2^28, every variant with CUB, CuPy, PyTorch and NumPy measured in the same run, PNG plots and CSV.

    python benchmarks/make_results.py --out benchmarks/results [--sizes 2^10:2^28:2] [--repeat 20]

The analysis that goes with the numbers is kept in benchmarks/analysis/<gpu>.md (written by a person
after reading them) and copied under the tables when present.
"""
import argparse
import os
import re
import time

from gpureduce import variants
from gpureduce.benchmark import OPERATORS, benchmark, device_info, parse_sizes


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", default="benchmarks/results")
    p.add_argument("--ops", default="sum,cumsum")
    p.add_argument("--dtypes", default="float32,int32,float64")
    p.add_argument("--sizes", default="2^10:2^28:2")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--commit", default=os.environ.get("GR_COMMIT", "unknown"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    info = device_info()
    gpu = slug(info["name"].replace("NVIDIA", ""))
    lines = [
        f"# gpureduce on {info['name']}",
        "",
        f"Commit {args.commit}, {time.strftime('%Y-%m-%d', time.gmtime())}. {info['sm_count']} SMs, "
        f"L2 {info['l2_bytes'] >> 20} MB, {info['memory_bytes'] / 2**30:.0f} GiB; measured ceilings: "
        f"read {info['read_gbps']:.0f} GB/s, device-to-device copy {info['copy_gbps']:.0f} GB/s (read + write).",
        "",
        "Method: CUDA events around each call, L2 flushed before each call (cold cache), warm-up calls, "
        f"median of {args.repeat}; peers timed the same way on the same device arrays in the same run "
        "(NumPy on the host, wall clock). GB/s counts bytes that must move (input; input + output for "
        "scans); '% ceiling' compares with a plain read (reductions) or copy (scans) of the same bytes, "
        "timed the same way. 'rel error' is max |result - float64 reference| over sum|x| (sums) or |result|.",
        "",
    ]
    analysis = os.path.join(os.path.dirname(__file__), "analysis", f"{gpu}.md")
    if os.path.exists(analysis):
        lines += [open(analysis, encoding="utf-8").read().strip(), ""]
    for op in args.ops.split(","):
        if not variants(kind=OPERATORS[op][0]):
            continue
        for dtype in args.dtypes.split(","):
            t0 = time.time()
            result = benchmark(op, "all", parse_sizes(args.sizes), dtype, args.repeat, progress=False)
            stem = f"{gpu}_{op}_{dtype}"
            result.to_csv(os.path.join(args.out, stem + ".csv"))
            result.plot(os.path.join(args.out, stem + ".png"))
            lines += [f"## {op} {dtype}", "", f"![{op} {dtype}]({stem}.png)", "", "```", str(result), "```", ""]
            print(f"{op} {dtype}: {len(result)} rows in {time.time() - t0:.0f} s", flush=True)
    path = os.path.join(args.out, f"{gpu}.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
