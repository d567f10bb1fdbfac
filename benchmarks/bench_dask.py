"""gpureduce.dask on one GPU and on every GPU of the machine (issue 16): wall-clock of sum and cumsum of a float32
Dask array held as NumPy chunks in the workers' memory, then the Dask overhead per reduction with CuPy chunks.

One worker per GPU: dask_cuda.LocalCUDACluster where it installs, else a distributed SpecCluster of nannies, each
with its own CUDA_VISIBLE_DEVICES.  The array is persisted on the workers before anything is timed; a cumsum's
result stays on the workers (persist and wait: bringing 16 GiB to the client is not the scan).  Every result is
checked (sum against the float64 sum of the chunks, computed on the workers by NumPy; cumsum's last element).

    python benchmarks/bench_dask.py [--log2n 32] [--chunk-log2 27] [--gpus 1,2] [--markdown PATH]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import commit  # noqa: E402


def cluster_for(gpus):
    """A local cluster of one single-threaded worker per GPU in `gpus` (a list of ordinals)."""
    try:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(CUDA_VISIBLE_DEVICES=",".join(map(str, gpus)), threads_per_worker=1), "dask_cuda"
    except ImportError:
        from distributed import Nanny, Scheduler, SpecCluster
        workers = {f"gpu{g}": {"cls": Nanny, "options": {"nthreads": 1, "env": {"CUDA_VISIBLE_DEVICES": str(g)}}}
                   for g in gpus}
        return SpecCluster(scheduler={"cls": Scheduler, "options": {"dashboard_address": ":0"}}, workers=workers,
                           asynchronous=False), "distributed.SpecCluster"


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def measure(gpus, n, chunk, repeats):
    import dask.array as da
    from distributed import Client, wait

    import gpureduce.dask as gd

    cluster, how = cluster_for(gpus)
    with cluster, Client(cluster) as client:
        x = da.random.default_rng(7).random(n, chunks=chunk, dtype=np.float32).persist()
        wait(x)
        exact = float(da.map_blocks(lambda b: np.array([b.sum(dtype=np.float64)]), x, chunks=(1,),
                                    dtype=np.float64).sum().compute())
        got = float(gd.sum(x).compute())
        assert abs(got - exact) <= 1e-5 * abs(exact), f"sum {got} against {exact}"
        t_sum = timed(lambda: gd.sum(x).compute(), repeats)

        def scan():
            r = gd.cumsum(x).persist()
            wait(r)
            return r

        last = float(scan()[-1].compute())
        assert abs(last - exact) <= 1e-4 * abs(exact), f"cumsum's last element {last} against {exact}"
        t_scan = timed(scan, repeats)
        client.cancel(x)
    return {"gpus": len(gpus), "how": how, "sum_s": t_sum, "cumsum_s": t_scan}


def dask_overhead(n, chunks, repeats):
    """gpureduce.dask.sum of CuPy chunks against gpureduce.sum of the same data in one CuPy array (one GPU, the
    threaded scheduler): the difference is what Dask adds per reduction."""
    import cupy
    import dask
    import dask.array as da

    import gpureduce
    import gpureduce.dask as gd

    whole = cupy.random.default_rng(3).random(n, dtype=cupy.float32)
    x = da.from_array(whole, chunks=n // chunks, asarray=False)
    with dask.config.set(scheduler="threads"):
        gd.sum(x).compute()
        t_dask = timed(lambda: gd.sum(x).compute(), repeats)
    gpureduce.sum(whole)
    t_one = timed(lambda: gpureduce.sum(whole), repeats)
    return t_dask, t_one


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--log2n", type=int, default=32)
    parser.add_argument("--chunk-log2", type=int, default=27)
    parser.add_argument("--gpus", default=None, help="GPU counts to compare, e.g. 1,2 (default: 1 and all)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", help="also write the report to this file")
    args = parser.parse_args()

    import gpureduce
    count = gpureduce.device_count()
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else sorted({1, count})
    n, chunk = 2**args.log2n, 2**args.chunk_log2
    rows = [measure(list(range(k)), n, chunk, args.repeats) for k in counts if k <= count]
    base = rows[0]
    lines = [f"# gpureduce.dask on {count} GPU(s): float32 array of 2^{args.log2n} elements in chunks of "
             f"2^{args.chunk_log2} (NumPy chunks persisted in the workers' memory)", "",
             f"Commit {commit()}, `benchmarks/bench_dask.py`, medians of {args.repeats}; one worker per GPU "
             f"({base['how']}).", "",
             "| GPUs | sum | speed-up | GB/s | cumsum | speed-up | GB/s (read + write) |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        nbytes = 4 * n
        lines.append(f"| {r['gpus']} | {r['sum_s'] * 1e3:.1f} ms | {base['sum_s'] / r['sum_s']:.2f} | "
                     f"{nbytes / r['sum_s'] / 1e9:.1f} | {r['cumsum_s'] * 1e3:.1f} ms | "
                     f"{base['cumsum_s'] / r['cumsum_s']:.2f} | {2 * nbytes / r['cumsum_s'] / 1e9:.1f} |")
    try:
        t_dask, t_one = dask_overhead(2**24, 8, 20)
        lines += ["", f"Dask's overhead per reduction, CuPy chunks on one GPU (2^24 float32 in 8 chunks, threaded "
                  f"scheduler): gpureduce.dask.sum {t_dask * 1e6:.0f} µs against gpureduce.sum of one CuPy array "
                  f"{t_one * 1e6:.0f} µs: {(t_dask - t_one) * 1e6:.0f} µs."]
    except ImportError as e:
        lines += ["", f"Dask overhead with CuPy chunks not measured: {e}"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
