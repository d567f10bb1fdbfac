import numpy as np, time, concurrent.futures as cf, multiprocessing as mp, sys
def fill(gib, threads, blocks=1):
    src = np.ones(1 << 27, np.float32)  # 512 MiB
    out = []
    t = time.time()
    with cf.ThreadPoolExecutor(threads) as pool:
        for b in range(gib * 2):
            dst = np.empty_like(src); out.append(dst)
            bounds = np.linspace(0, src.size, threads + 1).astype(int)
            list(pool.map(lambda p: np.copyto(dst[p[0]:p[1]], src[p[0]:p[1]]), zip(bounds[:-1], bounds[1:])))
        fresh = time.time() - t
        t = time.time()
        for dst in out:
            list(pool.map(lambda p: np.copyto(dst[p[0]:p[1]], src[p[0]:p[1]]), zip(bounds[:-1], bounds[1:])))
        again = time.time() - t
    return gib, threads, round(gib * 1.073741824 / fresh, 2), round(gib * 1.073741824 / again, 2)
if __name__ == "__main__":
    print(open('/sys/kernel/mm/transparent_hugepage/enabled').read().strip())
    for threads in (1, 8):
        print("one process, 16 GiB fresh / again GB/s (threads %d):" % threads, fill(16, threads))
    with mp.get_context("spawn").Pool(4) as p:
        t = time.time(); r = p.starmap(fill, [(4, 8)] * 4); print("4 processes x 4 GiB:", r, round(16 * 1.0737 / (time.time() - t), 2), "GB/s all")
