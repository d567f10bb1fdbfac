"""The host's rate of writing fresh memory (first touch: page faults) against writing the same memory again, in one
process on 1 and 8 threads and in 4 processes at once: the probe behind benchmarks/results/dask_h200x4.md's note
on the 1-GPU host cumsum (on an nvidia-h200-x4 machine: 3.4 / 9.6 GB/s on one thread, 15.7 / 30.3 on eight, 10.8
GB/s fresh in all for four processes of eight threads).

    python benchmarks/analysis/fresh_memory_write.py     # 16 GiB in 512 MiB blocks; about 10 s
"""
import concurrent.futures
import multiprocessing
import time

import numpy as np

BLOCK = 1 << 27  # float32 elements: 512 MiB


def fill(gib, threads):
    """(GiB, threads, fresh GB/s, again GB/s): `gib` GiB of new 512 MiB blocks written by np.copyto on `threads`
    threads, then the same blocks written again."""
    src = np.ones(BLOCK, np.float32)
    bounds = np.linspace(0, BLOCK, threads + 1).astype(int)
    pieces = list(zip(bounds[:-1], bounds[1:]))
    blocks = []

    def write(dst):
        list(pool.map(lambda p: np.copyto(dst[p[0]:p[1]], src[p[0]:p[1]]), pieces))

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        for _ in range(gib * 2):
            blocks.append(np.empty_like(src))
            write(blocks[-1])
        fresh = time.perf_counter() - start
        start = time.perf_counter()
        for dst in blocks:
            write(dst)
        again = time.perf_counter() - start
    return gib, threads, round(gib * 2**30 / fresh / 1e9, 2), round(gib * 2**30 / again / 1e9, 2)


def main():
    for threads in (1, 8):
        print(f"one process, 16 GiB (GiB, threads, fresh GB/s, again GB/s): {fill(16, threads)}")
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        start = time.perf_counter()
        each = pool.starmap(fill, [(4, 8)] * 4)
        print(f"4 processes x 4 GiB at once: {each}; {16 * 2**30 / (time.perf_counter() - start) / 1e9:.2f} GB/s "
              "fresh in all")


if __name__ == "__main__":
    main()
