"""The new stream paths of issue 38 under compute-sanitizer: 0-d results of CuPy and PyTorch inputs (no wait),
stream= (an explicit non-blocking stream, operands made on another), a DeviceArray result on a stream of its own,
a CUDA graph captured with CuPy and replayed on new data (calls with and without a graph-owned workspace), and
whole-array calls run again from their kept plans.  Every result is compared with NumPy; prints
"sanitizer streams: N calls" at the end.

    compute-sanitizer --tool synccheck python .ci/sanitizer_streams.py
"""
import numpy as np

import gpureduce
import gpureduce.testing


class DLPackOnly:
    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def main():
    import cupy as cp
    rng = np.random.default_rng(0)
    calls = 0

    def same(got, want, rtol=1e-10):
        nonlocal calls
        calls += 1
        np.testing.assert_allclose(gpureduce.testing.to_numpy(got), want, rtol=rtol, atol=1e-9)

    host = rng.standard_normal((300, 257))
    s, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.asarray(host)
        same(gpureduce.sum(x), host.sum())
        same(gpureduce.max(x, axis=0), host.max(axis=0))
        same(gpureduce.cumsum(x, axis=1), np.cumsum(host, axis=1))
        same(gpureduce.argmin(x), host.argmin())
        r = gpureduce.cumsum(x, stream=other)  # made on s, run on other
        other.synchronize()
        same(r, np.cumsum(host))
        same(gpureduce.sum(DLPackOnly(x), axis=1, stream=other), host.sum(axis=1))
        for _ in range(2):  # the same keys again: run from their kept plans (src/whole_calls.c)
            same(gpureduce.sum(x), host.sum())
            same(gpureduce.cumsum(x), np.cumsum(host))
            same(gpureduce.argmin(x), host.argmin())
    try:
        import torch
        t = torch.from_numpy(host).cuda()
        for _ in range(3):  # the second and third from the kept plan
            same(gpureduce.mean(t), host.mean())
        same(gpureduce.var(t, axis=0), host.var(axis=0))
        out = torch.empty(host.size, dtype=torch.float64, device="cuda")
        same(gpureduce.cumsum(t, out=out), np.cumsum(host))
    except ImportError:
        pass
    g_stream = cp.cuda.Stream(non_blocking=True)
    y = cp.asarray(host[:, 0].copy())
    big = cp.asarray(rng.standard_normal(1 << 20))  # its sum needs partials: a graph-owned workspace
    captured = [lambda: gpureduce.cumsum(y), lambda: gpureduce.sum(y), lambda: gpureduce.sum(big),
                lambda: gpureduce.sum(y.reshape(100, 3), axis=1)]  # the last three: one node, or four
    with g_stream:
        for call in captured:
            call()
        g_stream.synchronize()
        g_stream.begin_capture()
        r1, r2, r3, r4 = (call() for call in captured)
        graph = g_stream.end_capture()
    for data in (host[:, 1], host[:, 2]):
        y[...] = cp.asarray(data)
        big += 1.0
        cp.cuda.Device().synchronize()
        graph.launch(g_stream)
        g_stream.synchronize()
        same(r1, np.cumsum(data))
        same(r2, data.sum())
        same(r3, float(cp.sum(big)), rtol=1e-9)
        same(r4, data.reshape(100, 3).sum(axis=1))
    cp.cuda.Device().synchronize()
    print(f"sanitizer streams: {calls} calls")


if __name__ == "__main__":
    main()
