"""Grouped sums over ids in any order (issue 40): gpureduce.groupby_reduce against PyTorch's index_add_ and the
sort-based path, in one process on the same device buffers.

`index_add_` (and `scatter_add_`, the same kernel) adds floats with atomics: fast, but its bits depend on the
order the atomics land in.  gpureduce's scatter adds each element to its group's integer accumulators (exact, the
same bits in any order: cuda/axis/group_scatter_kernels.cuh); the sort path (a stable sort of the ids in the input's
library, a gather, the segmented reduction) is what groupby_reduce ran before, timed here with the algorithm auto
would pick for the groups' mean size.

    python benchmarks/bench_groupby.py --log2 26 --groups 1,16,256,1024,4096,65536,262144,1048576 --out results/

CUDA events on PyTorch's current stream around each call (a result allocated per call, as a user's), a 256 MiB
scratch write before every sample (cold L2), the median of --repeat samples after warm-up calls.  Every gpureduce
result is checked against a float64 index_add_ of the same data: the scatter's float32 sums within half an ulp
(exact, rounded once), float64 sums and the sort path's folds within their bounds, integer sums exactly.
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import commit, save_table  # noqa: E402


def timed(torch, fn, scratch, repeat, warmup=2):
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        scratch.fill_(1)
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        samples.append(start.elapsed_time(stop) * 1000.0)
    return statistics.median(samples)


def sort_algorithm(n, k):
    """The segmented reduction's algorithm auto picks for groups of mean size n / k (cuda/axis/ranges.cuh)."""
    mean = n / max(k, 1)
    return "thread" if mean <= 32 else "lanes" if mean < 2048 else "block"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--log2", type=int, default=26)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--groups", default="1,16,256,1024,4096,65536,262144,1048576")
    p.add_argument("--dtypes", default="float32,float64,int64")
    p.add_argument("--op", default="sum", choices=("sum", "max"),
                   help="max: against index_reduce_(amax) instead of index_add_")
    p.add_argument("--no-sort", action="store_true", help="leave out the sort path (slow)")
    p.add_argument("--out", help="write groupby_<gpu>.md, .json and .png there")
    args = p.parse_args(argv)
    import torch
    import gpureduce

    dev = torch.device("cuda")
    props = torch.cuda.get_device_properties(0)
    info = {"name": props.name, "sms": props.multi_processor_count, "commit": commit(), "torch": torch.__version__}
    n = 1 << args.log2
    scratch = torch.empty(256 << 20, dtype=torch.uint8, device=dev)
    gen = torch.Generator(device=dev).manual_seed(0)
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        if dtype.is_floating_point:
            x = torch.randn(n, device=dev, generator=gen, dtype=torch.float32).to(dtype)
        else:
            x = torch.randint(-1000, 1000, (n,), device=dev, generator=gen, dtype=dtype)
        for k in (int(v) for v in args.groups.split(",")):
            ids = torch.randint(0, k, (n,), device=dev, generator=gen, dtype=torch.int64)
            row = {"dtype": dtype_name, "groups": k, "n": n}
            try:
                gpureduce.groupby_reduce(args.op, x[:2], ids[:2], k, variant="scatter")
                variant = "scatter"
            except ValueError:  # more accumulators than the scatter takes: auto sorts
                variant = "auto"
            row["variant"] = variant
            got = gpureduce.groupby_reduce(args.op, x, ids, k, variant=variant)
            if args.op == "max":  # exact: the peer's answer in every group that holds an element
                peer = torch.full((k,), -float("inf") if dtype.is_floating_point else torch.iinfo(dtype).min,
                                  dtype=dtype, device=dev).index_reduce_(0, ids, x, "amax", include_self=True)
                row["gpureduce ok"] = bool(torch.equal(got, peer))
            elif dtype.is_floating_point:  # float32: within half an ulp of a float64 sum; float64: of its bound
                wide = torch.zeros(k, dtype=torch.float64, device=dev).index_add_(0, ids, x.double())
                ulp = torch.abs(torch.nextafter(got, torch.full_like(got, float("inf"))) - got).double()
                mags = torch.zeros(k, dtype=torch.float64, device=dev).index_add_(0, ids, x.double().abs())
                bound = ulp * 0.5001 if dtype != torch.float64 else ulp + 2.0 ** -52 * (4 * n / k + 1) * mags
                if variant == "auto":  # the sort path's fold: within its bound, not half an ulp
                    bound = ulp + 2.0 ** -23 * (n / k + 1) * mags if dtype != torch.float64 else bound
                row["gpureduce ok"] = bool((torch.abs(got.double() - wide) <= bound + 1e-300).all())
            else:
                exact = torch.zeros(k, dtype=torch.int64, device=dev).index_add_(0, ids, x.long())
                row["gpureduce ok"] = bool(torch.equal(got, exact))
            row["gpureduce"] = timed(torch, lambda: gpureduce.groupby_reduce(args.op, x, ids, k, variant=variant),
                                     scratch, args.repeat)
            # the ids' range, checked on the host before the scatter runs (one pass, one wait: aminmax)
            row["ids range"] = timed(torch, lambda: torch.stack(torch.aminmax(ids)).cpu(), scratch, args.repeat)
            if args.op == "max":  # the column keeps its name: PyTorch's scatter of the operator
                row["index_add_"] = timed(torch, lambda: torch.empty(k, dtype=dtype, device=dev).index_reduce_(
                    0, ids, x, "amax", include_self=False), scratch, args.repeat)
            else:
                row["index_add_"] = timed(torch, lambda: torch.zeros(k, dtype=dtype, device=dev).index_add_(0, ids, x),
                                          scratch, args.repeat)
            if dtype.is_floating_point and args.op == "sum":  # index_add_'s bits from run to run
                a = torch.zeros(k, dtype=dtype, device=dev).index_add_(0, ids, x)
                b = torch.zeros(k, dtype=dtype, device=dev).index_add_(0, ids, x)
                row["index_add_ repeats"] = bool(torch.equal(a, b))
            if not args.no_sort:
                alg = sort_algorithm(n, k)
                row["sort path"] = timed(torch, lambda: gpureduce.groupby_reduce(args.op, x, ids, k, variant=alg),
                                         scratch, max(3, args.repeat // 3), warmup=1)
                row["sort algorithm"] = alg
            row["ratio"] = row["gpureduce"] / row["index_add_"]
            rows.append(row)
            print(row, flush=True)
    peer = "index_add_" if args.op == "sum" else "index_reduce_ amax"
    head = (f"| dtype | groups | gpureduce (us) | {peer} (us) | gpureduce / {peer} | sort path (us) | "
            "index_add_ same bits twice | of gpureduce: the ids' range check (us) |\n"
            "|---|---:|---:|---:|---:|---:|---|---:|\n")
    lines = []
    for r in rows:
        sort = f"{r['sort path']:.1f} ({r['sort algorithm']})" if "sort path" in r else "n/a"
        lines.append(f"| {r['dtype']} | {r['groups']} | {r['gpureduce']:.1f} ({r['variant']})"
                     f"{'' if r['gpureduce ok'] else ' (wrong)'} | "
                     f"{r['index_add_']:.1f} | {r['ratio']:.2f} | {sort} | {r.get('index_add_ repeats', 'n/a')} | "
                     f"{r['ids range']:.1f} |\n")
    table = (f"groupby_reduce({args.op!r}) of 2^{args.log2} elements, ids uniform in [0, groups) (int64), {info['name']}, "
             f"commit {info['commit']}, torch {info['torch']}\n\n" + head + "".join(lines))
    stem = "groupby" if args.op == "sum" else f"groupby_{args.op}"
    save_table(args.out, stem, info, table, rows)
    if args.out:
        plot(rows, info, os.path.join(args.out, f"{stem}_{info['name'].replace(' ', '_')}.png"), args.op)


def plot(rows, info, path, op="sum"):
    """Microseconds against the number of groups, log-log, one panel per dtype: gpureduce, index_add_, the sort
    path (where measured).  Nothing without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    dtypes = list(dict.fromkeys(r["dtype"] for r in rows))
    fig, axes = plt.subplots(1, len(dtypes), figsize=(5 * len(dtypes), 4), squeeze=False)
    for ax, dtype in zip(axes[0], dtypes):
        mine = [r for r in rows if r["dtype"] == dtype]
        peer = "torch index_add_" if op == "sum" else f"torch index_reduce_ ({op})"
        for column, label in (("gpureduce", "gpureduce.groupby_reduce"), ("index_add_", peer),
                              ("sort path", "gpureduce's sort path")):
            points = [(r["groups"], r[column]) for r in mine if column in r]
            if points:
                ax.plot(*zip(*points), marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("groups")
        ax.set_ylabel("us per call (cold L2)")
        ax.set_title(f"{dtype} {op} of 2^{int(mine[0]['n']).bit_length() - 1}, {info['name']}")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
