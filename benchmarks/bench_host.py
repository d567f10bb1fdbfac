"""Wall-clock of a NumPy float32 array's sum and cumsum, from the host array to the finished NumPy result, next
to NumPy's own, in one process (medians; the first call of each size is a warm-up).  A first cut of issue 13's
host-path benchmark: PyTorch and the pinned-bandwidth ceiling are not in it yet.

    python benchmarks/bench_host.py
"""
import time, numpy as np, gpureduce
for n in (2**20, 2**24, 2**26, 2**28):
    a = np.random.default_rng(0).random(n, dtype=np.float32)
    for name, fn, ref in (("sum", gpureduce.sum, np.sum), ("cumsum", gpureduce.cumsum, np.cumsum)):
        fn(a); ts = []
        for _ in range(7 if n < 2**28 else 3):
            t = time.perf_counter(); r = fn(a); ts.append(time.perf_counter() - t); del r
        tn = []
        for _ in range(3 if n < 2**26 else 1):
            t = time.perf_counter(); ref(a); tn.append(time.perf_counter() - t)
        print(f"{name:7} n=2^{n.bit_length() - 1}: gpureduce {np.median(ts) * 1e3:8.3f} ms  "
              f"numpy {np.median(tn) * 1e3:8.3f} ms")
