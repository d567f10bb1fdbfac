"""benchmarks/results/<gpu>.md: sum and cumsum tables over float32 / int32 / float64 at 2^10..2^28,
every variant with CUB, CuPy, PyTorch and NumPy measured in the same run, with PNG plots and CSV; and a short
segmented and grouped table (float32 sums of 2^26 elements: bench_segmented.py's four range distributions, and
bench_groupby.py's ids in any order against index_add_, with its plot).

    python benchmarks/make_results.py measure --out DIR   # on the GPU: one JSON per table
    python benchmarks/make_results.py render DIR...       # anywhere: markdown, CSV and PNG from the JSONs

Rendering is separate so that the analysis (benchmarks/analysis/<gpu>.md, written by a person after
reading the numbers) can be added without measuring again.
"""
import argparse
import glob
import json
import os
import re
import time

from gpureduce.benchmark import BenchmarkResult, BenchmarkRow

HERE = os.path.dirname(os.path.abspath(__file__))


def slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower().replace("nvidia", "")).strip("_")


def measure(args):
    from gpureduce import variants
    from gpureduce.benchmark import OPERATORS, benchmark, device_info, parse_sizes

    os.makedirs(args.out, exist_ok=True)
    info = device_info()
    for op in args.ops.split(","):
        if not variants(kind=OPERATORS[op][0]):
            continue
        for dtype in args.dtypes.split(","):
            t0 = time.time()
            result = benchmark(op, "all", parse_sizes(args.sizes), dtype, args.repeat, progress=False)
            data = json.loads(result.to_json())
            data.update(commit=args.commit, repeat=args.repeat, date=time.strftime("%Y-%m-%d", time.gmtime()))
            with open(os.path.join(args.out, f"{slug(info['name'])}_{op}_{dtype}.json"), "w") as f:
                json.dump(data, f)
            print(f"{op} {dtype}: {len(result)} rows in {time.time() - t0:.0f} s", flush=True)
    if args.segmented:  # the short segmented and grouped tables, written beside the JSONs as their own .md/.json
        import bench_groupby
        import bench_segmented
        repeat = str(min(args.repeat, 10))
        bench_segmented.main(["--log2", "26", "--repeat", repeat, "--ops", "sum", "--dtypes", "float32",
                              "--out", args.out])
        bench_groupby.main(["--log2", "26", "--repeat", repeat, "--dtypes", "float32", "--groups",
                            "1,16,1024,65536,1048576", "--no-sort", "--out", args.out])


# What measure writes besides the variant tables: the segmented and grouped benchmarks' own files
SHORT_TABLES = ("segmented_", "groupby_")


def render(args):
    tables = {}  # a table measured again in a later directory replaces the earlier one
    for d in args.dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.json"))):
            if os.path.basename(path).startswith(SHORT_TABLES):
                continue
            with open(path) as f:
                tables[os.path.splitext(os.path.basename(path))[0]] = json.load(f)
    tables = list(tables.items())
    if not tables:
        raise SystemExit("no measurements (*.json) found")
    order = {"sum": 0, "cumsum": 1, "float32": 0, "int32": 1, "float64": 2}
    tables.sort(key=lambda t: (order.get(t[0].split("_")[-2], 9), order.get(t[0].split("_")[-1], 9)))
    info, first = tables[0][1]["device"], tables[0][1]
    gpu = slug(info["name"])
    commits = sorted({t.get("commit", "?") for _s, t in tables})
    out = args.out or os.path.join(HERE, "results")
    lines = [
        f"# gpureduce on {info['name']}",
        "",
        f"Measured at commit {', '.join(commits)} on {first.get('date', '?')}: {info['sm_count']} SMs, "
        f"L2 {info['l2_bytes'] >> 20} MB, {info['memory_bytes'] / 2**30:.0f} GiB; measured ceilings: read "
        f"{info['read_gbps']:.0f} GB/s, device-to-device copy {info['copy_gbps']:.0f} GB/s (read + write).",
        "",
        "Method: CUDA events around each call, L2 flushed before each call (cold cache), warm-up calls, median "
        f"of {first.get('repeat', '?')} (3 for calls slower than 50 ms); peers timed the same way on the same "
        "device arrays in the same run (NumPy on the host, wall clock). GB/s counts the bytes that must move "
        "(input; input + output for scans); '% ceiling' compares with a plain read (reductions) or copy (scans) "
        "of the same bytes timed the same way; 'step x' and 'total x' are Harris's speed-ups over the previous "
        "and the first row; 'err/bound' is the worst element's |result - float64 reference| over its own error "
        "bound (gpureduce.testing.error_bound: per element for scans, by the variant's rounding chain), over "
        "checked calls on the timing data and on exact-valued data written into a NaN-poisoned out= (min, max "
        "and integers must be exact); 'determ.' says whether two more runs were bitwise equal.",
        "",
    ]
    analysis = os.path.join(HERE, "analysis", f"{gpu}.md")
    if os.path.exists(analysis):
        with open(analysis, encoding="utf-8") as f:
            lines += [f.read().strip(), ""]
    for stem, data in tables:
        result = BenchmarkResult([BenchmarkRow(**r) for r in data["rows"]], data["device"])
        op, dtype = stem.split("_")[-2:]
        result.to_csv(os.path.join(out, stem + ".csv"))
        result.plot(os.path.join(out, stem + ".png"))
        lines += [f"## {op} {dtype}", "", f"![{op} {dtype}]({stem}.png)", "",
                  f"(commit {data.get('commit', '?')})", "", "```", str(result), "```", ""]
    short = {}  # the latest directory's table of each
    for d in args.dirs:
        for path in sorted(glob.glob(os.path.join(d, "*.md"))):
            name = os.path.basename(path)
            if name.startswith(SHORT_TABLES):
                with open(path, encoding="utf-8") as f:
                    short[name.split("_")[0]] = (f.read().strip(), path)
    if short:
        lines += ["## Segmented and grouped sums", ""]
        for text, path in short.values():
            lines += [text, ""]
            png = path[:-3] + ".png"
            if os.path.exists(png):
                lines += [f"![{os.path.basename(png)}]({os.path.relpath(png, out)})", ""]
    path = os.path.join(out, f"{gpu}.md")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    print(f"wrote {path} and {len(tables)} CSV + PNG pairs")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--out", required=True)
    m.add_argument("--ops", default="sum,cumsum")
    m.add_argument("--dtypes", default="float32,int32,float64")
    m.add_argument("--sizes", default="2^10:2^28:2")
    m.add_argument("--repeat", type=int, default=20)
    m.add_argument("--commit", default=os.environ.get("GR_COMMIT", "unknown"))
    m.add_argument("--no-segmented", dest="segmented", action="store_false",
                   help="leave out the short segmented and grouped tables")
    r = sub.add_parser("render")
    r.add_argument("dirs", nargs="+")
    r.add_argument("--out")
    args = p.parse_args()
    measure(args) if args.command == "measure" else render(args)


if __name__ == "__main__":
    main()
