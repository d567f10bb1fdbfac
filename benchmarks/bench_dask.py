"""gpureduce.dask on one GPU and on every GPU of the machine (issue 16): wall-clock of sum and cumsum of a float32
Dask array held as NumPy chunks in the workers' memory, then the Dask overhead per reduction with CuPy chunks.

One worker per GPU (gpureduce.dask.local_cluster: dask_cuda.LocalCUDACluster where it installs, else a distributed
SpecCluster of nannies, each with its own CUDA_VISIBLE_DEVICES).  The array is persisted on the workers before
anything is timed; a cumsum's result stays on the workers (persist and wait: bringing 16 GiB to the client is not
the scan).  Every result is checked (sum against the float64 sum of the chunks, computed on the workers by NumPy;
cumsum's last element).

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


def timed(fn, repeats):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def worker_h2d():
    """A worker's GPU's pinned host-to-device rate (gpureduce.device_info's h2d_gbps, measured again)."""
    import gpureduce
    return gpureduce.device_info(remeasure=True)["h2d_gbps"]


def worker_copy(start_at, gib=1, threads=8):
    """A plain copy of `gib` GiB of host memory on `threads` threads, after one untimed copy (the pages touched),
    started at wall-clock time `start_at` so that every worker copies at once: (start, end, bytes read + written)."""
    import concurrent.futures

    import numpy as np

    src = np.ones(gib << 28, np.float32)
    dst = np.empty_like(src)
    bounds = np.linspace(0, src.size, threads + 1).astype(int)
    pieces = [slice(lo, hi) for lo, hi in zip(bounds[:-1], bounds[1:])]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(lambda p: np.copyto(dst[p], src[p]), pieces))
        time.sleep(max(0.0, start_at - time.time()))
        start = time.time()
        list(pool.map(lambda p: np.copyto(dst[p], src[p]), pieces))
        return start, time.time(), 2 * src.nbytes


def machine_ceiling(client):
    """What the host-resident rows can reach on this cluster: the workers' pinned host-to-device rates (measured
    on all at once) added up, and the host memory's rate under a plain copy on every worker at once (all bytes over
    the first start to the last end); the sum of host chunks reads each byte once, so its ceiling is the smaller."""
    links = sum(client.run(worker_h2d).values())
    copies = list(client.run(worker_copy, time.time() + 3.0).values())
    host = sum(b for _, _, b in copies) / (max(e for _, e, _ in copies) - min(s for s, _, _ in copies)) / 1e9
    return {"links_gbps": links, "host_copy_gbps": host, "ceiling_gbps": min(links, host)}


def tasks(result, base):
    """The tasks `result`'s graph adds to `base`'s (the persisted input's): what Dask schedules per call."""
    return len(dict(result.__dask_graph__())) - len(dict(base.__dask_graph__()))


def measure(gpus, n, chunk, repeats):
    """Wall-clock of sum and cumsum on a cluster of one worker per GPU in `gpus`: NumPy chunks in the workers'
    memory, then the same data as CuPy chunks on the workers' GPUs, and the cost of one tiny reduction."""
    import dask.array as da
    from dask.graph_manipulation import clone
    from distributed import Client, wait

    import gpureduce
    import gpureduce.dask as gd

    with gd.local_cluster(gpus) as cluster, Client(cluster) as client:
        how = type(cluster).__name__
        ceiling = machine_ceiling(client)  # before the array takes the workers' memory
        x = da.random.default_rng(7).random(n, chunks=chunk, dtype=np.float32).persist()
        wait(x)
        exact = float(da.map_blocks(lambda b: np.array([b.sum(dtype=np.float64)]), x, chunks=(1,),
                                    dtype=np.float64).sum().compute())
        row = {"gpus": len(gpus), "how": how, **ceiling}

        def check_sum(got, what):
            assert abs(float(got) - exact) <= 1e-5 * abs(exact), f"{what}: sum {float(got)} against {exact}"

        def scan(a):
            # new keys each time (the graph cloned, `a` kept): the last result's keys may still be being released
            r = clone(gd.cumsum(a), omit=a).persist()
            wait(r)
            return r

        def persisted(a):
            r = a.persist()
            wait(r)
            return r

        def last_of(r):
            last = r[-1].compute()
            return float(last.get() if hasattr(last, "get") else last)

        row["sum_tasks"], row["cumsum_tasks"] = tasks(gd.sum(x), x), tasks(gd.cumsum(x), x)
        check_sum(gd.sum(x).compute(), "NumPy chunks")
        row["sum_s"] = timed(lambda: gd.sum(x).compute(), repeats)
        row["dask_sum_s"] = timed(lambda: x.sum().compute(), repeats)  # Dask's own: NumPy on the workers' CPUs
        print(f"{len(gpus)} GPU(s), NumPy chunks: sum {row['sum_s'] * 1e3:.1f} ms", flush=True)
        r = scan(x)
        assert abs(last_of(r) - exact) <= 1e-4 * abs(exact), f"cumsum's last element {last_of(r)} against {exact}"
        client.cancel(r)
        row["cumsum_s"] = timed(lambda: client.cancel(scan(x)), repeats)
        # the blocks' own scans, no carry: what the carries and their folds add to a cumsum is the difference
        blocks = x.map_blocks(gpureduce.cumsum, meta=np.empty((0,), np.float32))
        row["block_scans_s"] = timed(lambda: client.cancel(persisted(clone(blocks, omit=x))), repeats)

        try:
            import cupy
        except ImportError:
            cupy = None
        if cupy is not None:
            xc = x.map_blocks(cupy.asarray).persist()
            wait(xc)
            x = None  # the host chunks released (cancelling them would cancel their dependents, xc, too)
            check_sum(gd.sum(xc).compute(), "CuPy chunks")
            row["cupy_sum_s"] = timed(lambda: gd.sum(xc).compute(), repeats)
            row["dask_cupy_sum_s"] = timed(lambda: xc.sum().compute(), repeats)  # Dask's own: CuPy's kernels
            r = scan(xc)
            assert abs(last_of(r) - exact) <= 1e-4 * abs(exact), "cumsum of CuPy chunks"
            client.cancel(r)
            row["cupy_cumsum_s"] = timed(lambda: client.cancel(scan(xc)), repeats)
            xc = None
            # one reduction of 8 chunks of 2^20 already on the GPUs: what Dask adds around ~10 µs of kernels
            small = da.random.default_rng(8).random(2**23, chunks=2**20, dtype=np.float32).map_blocks(
                cupy.asarray).persist()
            wait(small)
            gd.sum(small).compute()
            row["small_s"] = timed(lambda: gd.sum(small).compute(), 4 * repeats)
            row["dask_small_s"] = timed(lambda: small.sum().compute(), 4 * repeats)
        row["read_gbps"] = gpureduce.device_info()["read_gbps"]
    print(row, flush=True)  # each configuration's figures as soon as they are measured
    return row


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
    parser.add_argument("--gpus", default=None, help="GPU counts to compare, in the order to measure them, e.g. 1,2 "
                        "(default: 1 and all)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", help="also write the report to this file")
    args = parser.parse_args()

    import gpureduce
    count = gpureduce.device_count()
    counts = [int(c) for c in args.gpus.split(",")] if args.gpus else sorted({1, count})
    n, chunk = 2**args.log2n, 2**args.chunk_log2
    # measured in the order given (--gpus 4,2,1: the first cluster grows a fresh VM's memory, not the last), shown
    # from one GPU up, each speed-up against the fewest GPUs
    rows = sorted((measure(list(range(k)), n, chunk, args.repeats) for k in counts if k <= count),
                  key=lambda r: r["gpus"])
    base, nbytes = rows[0], 4 * n
    lines = [f"# gpureduce.dask on {count} GPU(s): float32 array of 2^{args.log2n} elements in chunks of "
             f"2^{args.chunk_log2}", "",
             f"Commit {commit()}, `benchmarks/bench_dask.py`, medians of {args.repeats}; one worker per GPU "
             f"(gpureduce.dask.local_cluster: {base['how']}), the array persisted on the workers before timing; "
             "a cumsum's result is persisted on the workers (not gathered).", "",
             "NumPy chunks in the workers' memory:", "",
             "| GPUs | sum | speed-up | GB/s | of the ceiling | dask.array's own sum (NumPy) | cumsum | speed-up | "
             "GB/s (read + write) | the blocks' scans alone | tasks (sum / cumsum) |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['gpus']} | {r['sum_s'] * 1e3:.1f} ms | {base['sum_s'] / r['sum_s']:.2f} | "
                     f"{nbytes / r['sum_s'] / 1e9:.1f} | {nbytes / r['sum_s'] / 1e9 / r['ceiling_gbps']:.0%} | "
                     f"{r['dask_sum_s'] * 1e3:.1f} ms | "
                     f"{r['cumsum_s'] * 1e3:.1f} ms | "
                     f"{base['cumsum_s'] / r['cumsum_s']:.2f} | {2 * nbytes / r['cumsum_s'] / 1e9:.1f} | "
                     f"{r['block_scans_s'] * 1e3:.1f} ms | {r['sum_tasks']} / {r['cumsum_tasks']} |")
    lines += ["", "The machine's ceiling for the host-resident sum, measured on the same workers before the array: the "
              "smaller of their pinned host-to-device rates added up and the host memory's rate under a plain copy "
              "(8 threads, 1 GiB) on every worker at once:", "",
              "| GPUs | host-to-device, all links | host memory, copy on every worker | ceiling |",
              "|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['gpus']} | {r['links_gbps']:.1f} GB/s | {r['host_copy_gbps']:.1f} GB/s | "
                     f"{r['ceiling_gbps']:.1f} GB/s |")
    if "cupy_sum_s" in base:
        lines += ["", "CuPy chunks on the workers' GPUs; \"kernels alone\" is each GPU's share read at its measured "
                  "read ceiling, so the rest of the wall-clock is Dask's (scheduling, the tree of partials, "
                  "moving results):", "",
                  "| GPUs | sum | kernels alone | Dask's share | dask.array's own sum (CuPy) | cumsum | "
                  "tiny sum (8 × 2^20) | dask.array's own tiny sum |",
                  "|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in rows:
            alone = nbytes / r["gpus"] / (r["read_gbps"] * 1e9)
            lines.append(f"| {r['gpus']} | {r['cupy_sum_s'] * 1e3:.1f} ms | {alone * 1e3:.1f} ms | "
                         f"{(r['cupy_sum_s'] - alone) * 1e3:.1f} ms | {r['dask_cupy_sum_s'] * 1e3:.1f} ms | "
                         f"{r['cupy_cumsum_s'] * 1e3:.1f} ms | {r['small_s'] * 1e3:.2f} ms | "
                         f"{r['dask_small_s'] * 1e3:.2f} ms |")
    try:
        t_dask, t_one = dask_overhead(2**24, 8, 20)
        lines += ["", f"Without a cluster (threaded scheduler, CuPy chunks on one GPU, 2^24 float32 in 8 chunks): "
                  f"gpureduce.dask.sum {t_dask * 1e6:.0f} µs against gpureduce.sum of one CuPy array "
                  f"{t_one * 1e6:.0f} µs: {(t_dask - t_one) * 1e6:.0f} µs of Dask."]
    except ImportError as e:
        lines += ["", f"Dask overhead with CuPy chunks not measured: {e}"]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(report)


if __name__ == "__main__":
    main()
