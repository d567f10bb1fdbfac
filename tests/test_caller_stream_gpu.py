"""Calls on device data inside the caller's own flow (issue 38): 0-d results in the input's kind with no wait for
the device, the caller's stream and stream=, CUDA-graph capture and replay on new data (PyTorch and CuPy),
torch.compile without graph breaks, threads each on its own stream, the per-thread default stream, and a stream
destroyed whose handle comes back.

A kernel that spins for about 0.1 s holds a stream back where a test must show that a call did not wait."""
import math
import threading
import time

import numpy as np
import pytest

import gpureduce
from conftest import DLPackOnly, _cupy, _torch
from gpureduce._bounds import correctly_rounded_sum
from gpureduce.testing import error_bound, to_numpy

pytestmark = pytest.mark.gpu

_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
SPIN_CYCLES = 400_000_000  # about 0.2 s at 2 GHz


def _spin(cp, stream):
    with stream:
        cp.RawKernel(_SPIN, "spin")((1,), (1,), (np.int64(SPIN_CYCLES),))


def _host(r):
    return to_numpy(r)


def _jax():
    jax = pytest.importorskip("jax")
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("jax without a GPU backend")
    return jax, device


# ---------------------------------------------------------------- 0-d results in the input's kind

REDUCTIONS = [("sum", {}), ("max", {}), ("mean", {}), ("argmin", {}), ("var", {"ddof": 1}), ("prod", {}),
              ("nanmax", {}), ("count_nonzero", {})]


@pytest.mark.parametrize("name, kw", REDUCTIONS)
@pytest.mark.parametrize("kind", ["cupy", "torch", "jax", "dlpack", "numpy"])
def test_a_0d_result_is_an_array_of_the_inputs_kind(kind, name, kw, rng):
    host = rng.standard_normal(1000).astype(np.float32)
    want = getattr(np, name)(host, **kw)
    if kind == "cupy":
        cp = _cupy()
        x, expected_type = cp.asarray(host), cp.ndarray
    elif kind == "torch":
        torch = _torch()
        x, expected_type = torch.from_numpy(host).cuda(), torch.Tensor
    elif kind == "jax":
        jax, device = _jax()
        x, expected_type = jax.device_put(host, device), jax.Array
    elif kind == "dlpack":
        x, expected_type = DLPackOnly(_cupy().asarray(host)), gpureduce.DeviceArray
    else:
        x, expected_type = host, np.generic
    got = getattr(gpureduce, name)(x, **kw)
    assert isinstance(got, expected_type), f"{name} of a {kind} input gave a {type(got).__name__}"
    if kind != "numpy":
        assert tuple(got.shape) == ()
    value = _host(got)
    # JAX without jax_enable_x64 keeps 32-bit integers, its own argmin's too
    assert value.dtype == np.asarray(want).dtype or kind == "jax" and value.dtype == np.int32
    # (a mean or sum of random normals may nearly cancel: the bound is relative to the magnitudes summed too)
    atol = 1e-5 * float(np.abs(host).mean()) if name in ("mean", "sum") else 0.0
    np.testing.assert_allclose(float(value), float(want), rtol=1e-5, atol=atol)
    # float() of each kind brings the value home
    assert float(got) == pytest.approx(float(want), rel=1e-5, abs=atol)


def test_a_0d_device_array_answers_like_a_numpy_0d_array():
    cp = _cupy()
    r = gpureduce.sum(DLPackOnly(cp.arange(10, dtype=cp.int64)))
    assert isinstance(r, gpureduce.DeviceArray) and r.shape == () and r.dtype == np.int64
    assert float(r) == 45.0 and int(r) == 45 and bool(r) and r.item() == 45 and complex(r) == 45
    assert r == 45 and r == np.int64(45) and not (r < 45) and [10, 20][int(r) // 45] == 20
    assert np.asarray(r) == 45 and f"{int(r)}" == "45"
    assert list(range(50))[r] == 45  # operator.index


def test_no_wait_for_the_device_on_a_0d_result():
    """The whole-array sum of a CuPy array behind a 0.2 s kernel returns at once; its value is right later."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.ones(1 << 20, dtype=cp.float32)
    with s:
        gpureduce.sum(x)  # kernels loaded, CuPy's pool holding memory for this stream
        s.synchronize()
        _spin(cp, s)
        start = time.perf_counter()
        r = gpureduce.sum(x)
        took = time.perf_counter() - start
        assert isinstance(r, cp.ndarray)
        assert took < 0.05, f"the call waited {took:.3f} s for the device"
        assert float(r) == float(1 << 20)  # float() waits


def test_no_wait_for_the_device_on_a_torch_0d_result():
    torch = _torch()
    cp = _cupy()
    x = torch.ones(1 << 20, device="cuda")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        gpureduce.max(x)  # kernels loaded, and PyTorch's allocator holds memory for this stream (a first
        torch.cuda.synchronize()  # cudaMalloc may wait for the device, as torch.max's would)
        _spin(cp, cp.cuda.ExternalStream(s.cuda_stream))
        start = time.perf_counter()
        r = gpureduce.max(x)
        took = time.perf_counter() - start
        assert took < 0.05, f"the call waited {took:.3f} s for the device"
        assert r.item() == 1.0


# ---------------------------------------------------------------- the caller's stream and stream=

def _bounds_like(x, values):
    """`values` as an int64 device array of x's library, made on its current stream."""
    if type(x).__module__.startswith("torch"):
        import torch
        return torch.as_tensor(values, dtype=torch.int64, device=x.device)
    return _cupy().asarray(values, dtype=np.int64)


# the segmented reductions, with device bounds of the input's library: (call, gpureduce's, NumPy's)
_SEGMENTED = {
    "segmented_reduce": (lambda x, **k: gpureduce.segmented_reduce("sum", x, _bounds_like(x, [0, 100, 5]),
                                                                   _bounds_like(x, [100, 257, 5]), **k),
                         lambda h: np.stack([h[0:100].sum(axis=0), h[100:257].sum(axis=0), np.zeros(h.shape[1])])),
    # device indices are checked by two reductions and one wait, on the call's stream too
    "reduceat": (lambda x, **k: gpureduce.reduceat("max", x, _bounds_like(x, [0, 10, 200]), **k),
                 lambda h: np.maximum.reduceat(h, [0, 10, 200], axis=0)),
}


@pytest.mark.parametrize("out_kind", [None, "same", "other"])
@pytest.mark.parametrize("call", ["sum_axis0", "cumsum", "sum", "argmax", *_SEGMENTED])
@pytest.mark.parametrize("kind", ["cupy", "torch"])
def test_a_non_blocking_producer_stream_orders_the_work(kind, call, out_kind, rng):
    """The input is written on a non-blocking stream held back by a spin; the call (and out=) on that stream sees
    the written values, and what the caller reads next on that stream sees the result.  An out= of the other
    library (on that library's current stream) is read there after the work too."""
    cp = _cupy()
    torch = _torch() if kind == "torch" or out_kind == "other" else None
    host = rng.integers(-50, 50, (257, 33)).astype(np.float64)
    fn = {"sum_axis0": lambda x, **k: gpureduce.sum(x, axis=0, **k), "cumsum": lambda x, **k: gpureduce.cumsum(x, **k),
          "sum": lambda x, **k: gpureduce.sum(x, **k), "argmax": lambda x, **k: gpureduce.argmax(x, **k),
          **{name: f for name, (f, _) in _SEGMENTED.items()}}[call]
    want = {"sum_axis0": host.sum(axis=0), "cumsum": np.cumsum(host), "sum": host.sum(), "argmax": host.argmax(),
            **{name: reference(host) for name, (_, reference) in _SEGMENTED.items()}}[call]
    if kind == "cupy":
        s = cp.cuda.Stream(non_blocking=True)
        ctx, raw = s, s
        zeros = lambda shape, dt: cp.zeros(shape, dt)  # noqa: E731
    else:
        s = torch.cuda.Stream()
        ctx, raw = torch.cuda.stream(s), cp.cuda.ExternalStream(s.cuda_stream)
        zeros = lambda shape, dt: torch.zeros(shape, dtype=getattr(torch, np.dtype(dt).name), device="cuda")  # noqa
    other_zeros = (lambda shape, dt: torch.zeros(shape, dtype=getattr(torch, np.dtype(dt).name), device="cuda")) \
        if kind == "cupy" else (lambda shape, dt: cp.zeros(shape, dt))
    with ctx:
        x = zeros(host.shape, np.float64)
        fn(x)  # kernels loaded
        _spin(cp, raw)
        x += (cp.asarray(host) if kind == "cupy" else torch.from_numpy(host).cuda())
        kw = {}
        if out_kind is not None:
            kw["out"] = (zeros if out_kind == "same" else other_zeros)(np.shape(want), np.asarray(want).dtype)
        r = fn(x, **kw)
        if out_kind is not None:
            assert r is kw["out"]
        got = _host(r)  # on the same stream, or the other library's current one: after the work
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("how", ["int", "cupy", "torch", "cuda_stream_protocol"])
def test_stream_keyword_runs_the_call_there(how, rng):
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    handle = {"int": s.ptr, "cupy": s, "cuda_stream_protocol": _Protocol(s.ptr)}.get(how)
    if how == "torch":
        torch = _torch()
        ts = torch.cuda.Stream()
        s, handle = cp.cuda.ExternalStream(ts.cuda_stream), ts
    host = rng.standard_normal((64, 100))
    x = cp.asarray(host)
    gpureduce.sum(x, axis=1)
    cp.cuda.Device().synchronize()
    _spin(cp, s)
    r = gpureduce.sum(x, axis=1, stream=handle)  # queued behind the spin on s
    assert not s.done
    s.synchronize()
    np.testing.assert_allclose(_host(r), host.sum(axis=1))


@pytest.mark.parametrize("call", list(_SEGMENTED))
def test_stream_keyword_runs_the_segmented_reductions_there(call, rng):
    """stream= of reduceat and segmented_reduce: the bounds' cast, the indices' check and the reduction are
    queued on it (behind a spin) while CuPy's current stream is another."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    fn, reference = _SEGMENTED[call]
    host = rng.integers(-50, 50, (257, 33)).astype(np.float64)
    x = cp.asarray(host)
    fn(x)
    cp.cuda.Device().synchronize()
    if call == "segmented_reduce":  # (reduceat's check of device indices waits for its two reductions on s)
        _spin(cp, s)
    r = fn(x, stream=s)
    if call == "segmented_reduce":
        assert not s.done
    s.synchronize()
    np.testing.assert_array_equal(_host(r), reference(host))


class _Protocol:
    def __init__(self, handle):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def test_stream_keyword_waits_for_the_stream_the_data_was_made_on(rng):
    """x is written on CuPy's current (non-blocking, held back) stream; stream= another one still sees it."""
    cp = _cupy()
    made_on, other = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    host = rng.standard_normal(4096)
    with made_on:
        x = cp.zeros(4096)
        gpureduce.cumsum(x)
        _spin(cp, made_on)
        x += cp.asarray(host)
        r = gpureduce.cumsum(x, stream=other)
    other.synchronize()
    np.testing.assert_allclose(_host(r), np.cumsum(host), rtol=1e-12, atol=1e-9)


def test_stream_keyword_refuses_what_is_not_a_stream():
    x = _cupy().arange(4.0)
    for bad in ("1", 1.5, object(), -1):
        with pytest.raises((TypeError, ValueError), match="stream"):
            gpureduce.sum(x, stream=bad)


def test_the_per_thread_default_stream():
    cp = _cupy()
    x = cp.arange(1000, dtype=cp.float32)
    r = gpureduce.sum(x, stream=2)  # cudaStreamPerThread
    assert float(r) == 499500.0
    r = gpureduce.cumsum(x, stream=2)
    cp.cuda.Device().synchronize()
    assert float(r[-1]) == 499500.0


def test_a_stream_destroyed_and_its_handle_reused(rng):
    cp = _cupy()
    host = rng.standard_normal(5000)
    for _ in range(20):
        s = cp.cuda.Stream(non_blocking=True)
        x = cp.asarray(host)
        r = gpureduce.cumsum(x, stream=s)
        t = gpureduce.sum(DLPackOnly(x), stream=s)  # a DeviceArray result, freed on a stream of its own
        s.synchronize()
        del s  # destroyed; the next one may get its handle
        np.testing.assert_allclose(_host(r), np.cumsum(host), rtol=1e-12, atol=1e-9)
        assert float(t) == pytest.approx(host.sum())
    cp.cuda.Device().synchronize()


def test_sixteen_threads_each_on_its_own_stream(rng):
    cp = _cupy()
    data = [rng.standard_normal((300, 77)) for _ in range(16)]
    errors = []

    def work(i):
        try:
            s = cp.cuda.Stream(non_blocking=True)
            with s:
                x = cp.asarray(data[i])
                for _ in range(20):
                    a = gpureduce.sum(x, axis=0)
                    b = gpureduce.cumsum(x, axis=1)
                    c = gpureduce.max(x)
                # within gpureduce's error bound of the exact sums (a lost ordering is off by far more): a
                # fixed rtol fails where a column's sum nearly cancels (1 of 77 columns once)
                exact_a = np.array([math.fsum(column) for column in data[i].T])
                assert np.all(np.abs(_host(a) - exact_a) <= error_bound("sum", data[i], np.float64, axis=0))
                assert np.all(np.abs(_host(b) - np.cumsum(data[i], axis=1)) <=  # NumPy's rounding and ours
                              2 * error_bound("cumsum", data[i], np.float64, axis=1))
                assert float(c) == data[i].max()
        except Exception as e:  # noqa: BLE001 -- reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


# ---------------------------------------------------------------- CUDA graphs

def test_torch_cuda_graph_capture_and_replay_on_new_data(rng):
    torch = _torch()
    a, b = rng.standard_normal((64, 129)), rng.standard_normal((64, 129))
    x = torch.from_numpy(a).cuda()
    calls = [lambda: gpureduce.cumsum(x), lambda: gpureduce.sum(x, axis=0, keepdims=True), lambda: gpureduce.sum(x),
             lambda: gpureduce.argmax(x, axis=1), lambda: gpureduce.mean(x), lambda: gpureduce.cumsum(x, axis=1),
             lambda: gpureduce.var(x, axis=0), lambda: gpureduce.prod(x[:3, :5])]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for call in calls:  # warm-up: kernels loaded outside the capture
            call()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        results = [call() for call in calls]
    for data in (b, a, b):
        x.copy_(torch.from_numpy(data))
        g.replay()
        torch.cuda.synchronize()
        want = [np.cumsum(data), data.sum(axis=0, keepdims=True), data.sum(), data.argmax(axis=1), data.mean(),
                np.cumsum(data, axis=1), data.var(axis=0), np.prod(data[:3, :5])]
        for got, w in zip(results, want):
            np.testing.assert_allclose(_host(got), w, rtol=1e-10, atol=1e-10)


def test_capture_in_a_fresh_process_whose_only_earlier_calls_were_eager_sums():
    """The capture holds the process's first pool allocation (the workspace of a sum that needs partials): nothing
    in it may configure the pool or ask for free memory (cudaMemGetInfo invalidates a capture)."""
    import subprocess
    import sys
    import textwrap
    _torch()
    code = textwrap.dedent("""
        import numpy as np, torch, gpureduce
        xs = [torch.rand(1024, device="cuda") for _ in range(19)] + [torch.rand(1 << 22, device="cuda")]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for x in xs:
                gpureduce.sum(x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            rs = [gpureduce.sum(x) for x in xs]
        for x in xs:
            x.copy_(torch.rand(x.numel(), device="cuda"))
        g.replay()
        torch.cuda.synchronize()
        assert all(abs(float(r) - float(x.sum())) < 1e-5 * x.numel() for r, x in zip(rs, xs))
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "ok" in done.stdout, done.stdout + done.stderr


def test_cupy_stream_capture_and_replay_on_new_data(rng):
    cp = _cupy()
    a, b = rng.standard_normal(10000), rng.standard_normal(10000)
    x = cp.asarray(a)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        gpureduce.cumsum(x)
        gpureduce.sum(x)
        gpureduce.max(x.reshape(100, 100), axis=0)
        s.synchronize()
        s.begin_capture()
        r1 = gpureduce.cumsum(x)
        r2 = gpureduce.sum(x)
        r3 = gpureduce.max(x.reshape(100, 100), axis=0)
        graph = s.end_capture()
    for data in (b, a):
        x[...] = cp.asarray(data)
        cp.cuda.Device().synchronize()
        graph.launch(s)
        s.synchronize()
        np.testing.assert_allclose(_host(r1), np.cumsum(data), rtol=1e-10, atol=1e-9)
        assert float(r2) == pytest.approx(data.sum(), rel=1e-12)
        np.testing.assert_array_equal(_host(r3), data.reshape(100, 100).max(axis=0))


def _sum_variants():
    return [v.name for v in gpureduce.variants(kind="reduce", op="sum") if "float32" in v.dtypes]


def _check_every_variant(results, names, data):
    want = float(np.sum(data, dtype=np.float64))
    for name, r in zip(names, results):
        got = _host(r)
        assert got.shape == () and got.dtype == np.float32, name
        if name == "exact":
            assert got.tobytes() == np.asarray(correctly_rounded_sum(data, np.float32)).tobytes(), name
        else:
            assert abs(float(got) - want) <= float(error_bound("sum", data, np.float32, variant=name)), name


def test_every_reduce_variant_captured_by_cupy_replays_on_new_data(rng):
    """Every reduce variant's whole-array sum, the classic ones' flat kernels and "exact" included, captured with
    CuPy's Stream.begin_capture and replayed three times on new data.  The 0-d result is CuPy's own array (its
    pool's memory): a DeviceArray made in the capture was an allocation the graph owned and never freed, so the
    graph could not be launched (cudaErrorInvalidValue)."""
    cp = _cupy()
    names = _sum_variants()
    a, b = rng.standard_normal(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32)
    x = cp.asarray(a)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        for name in names:  # kernels loaded outside the capture
            gpureduce.sum(x, variant=name)
        s.synchronize()
        s.begin_capture()
        results = [gpureduce.sum(x, variant=name) for name in names]
        graph = s.end_capture()
    for r, name in zip(results, names):
        assert isinstance(r, cp.ndarray) and not isinstance(r.data.mem, cp.cuda.memory.UnownedMemory), name
    for data in (b, a, b):
        x[...] = cp.asarray(data)
        cp.cuda.Device().synchronize()
        graph.launch(s)
        s.synchronize()
        _check_every_variant(results, names, data)


def test_every_reduce_variant_captured_by_torch_replays_on_new_data(rng):
    torch = _torch()
    names = _sum_variants()
    a, b = rng.standard_normal(5000).astype(np.float32), rng.standard_normal(5000).astype(np.float32)
    x = torch.from_numpy(a).cuda()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for name in names:
            gpureduce.sum(x, variant=name)
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        results = [gpureduce.sum(x, variant=name) for name in names]
    for data in (b, a, b):
        x.copy_(torch.from_numpy(data))
        g.replay()
        torch.cuda.synchronize()
        _check_every_variant(results, names, data)


def test_a_captured_one_pass_reduction_is_its_kernel_alone(rng):
    """A reduction whose plan reads no workspace (a whole small array, rows, columns in one pass) adds one node
    to a graph, its kernel: no workspace allocation, zeroing and free around it, so that a replay costs about
    the kernels' time.  One that needs partials still gets its graph-owned workspace (its allocation, zeroing and
    free are nodes too)."""
    import ctypes
    cp = _cupy()
    driver = ctypes.CDLL("libcuda.so.1")
    x = cp.asarray(rng.random(1024, dtype=np.float32))
    m = cp.asarray(rng.random((64, 100)))
    big = cp.asarray(rng.random(1 << 22, dtype=np.float32))
    calls = [(lambda: gpureduce.sum(x), 1), (lambda: gpureduce.max(x), 1), (lambda: gpureduce.sum(m, axis=1), 1),
             (lambda: gpureduce.sum(m, axis=0), 1), (lambda: gpureduce.sum(big), None)]
    s = cp.cuda.Stream(non_blocking=True)
    for call, want in calls:
        with s:
            call()  # kernels loaded, the result's size in CuPy's pool, outside the capture
        s.synchronize()
        assert driver.cuStreamBeginCapture_v2(ctypes.c_void_p(s.ptr), 2) == 0  # CU_STREAM_CAPTURE_MODE_RELAXED
        try:
            with s:
                call()
        finally:
            graph = ctypes.c_void_p()
            assert driver.cuStreamEndCapture(ctypes.c_void_p(s.ptr), ctypes.byref(graph)) == 0
        count = ctypes.c_size_t(0)
        assert driver.cuGraphGetNodes(graph, None, ctypes.byref(count)) == 0
        driver.cuGraphDestroy(graph)
        assert (count.value == want) if want else (count.value >= 4)


def test_a_host_array_under_capture_is_refused_clearly():
    torch = _torch()
    x = torch.ones(10, device="cuda")
    gpureduce.sum(x)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(TypeError, match="capture"):
        with torch.cuda.graph(g):
            gpureduce.sum(np.ones(10), stream=torch.cuda.current_stream())
    torch.cuda.synchronize()
    assert float(gpureduce.sum(x)) == 10.0  # the context is fine afterwards


# ---------------------------------------------------------------- torch.compile

def _torch_with_custom_ops():
    """PyTorch with gpureduce's custom operators registered (torch.library.custom_op: PyTorch 2.4), else a skip."""
    torch = _torch()
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        pytest.skip("torch.library.custom_op needs PyTorch 2.4")
    gpureduce.register_torch_ops()
    return torch


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_torch_compile_keeps_gpureduce_in_the_graph(mode, rng):
    torch = _torch_with_custom_ops()

    def f(t):
        return gpureduce.sum(t) * 2 + gpureduce.max(t, axis=0).sum() + gpureduce.cumsum(t, axis=1)[:, -1].mean() \
            + gpureduce.var(t, axis=1, ddof=1).sum()

    compiled = torch.compile(f, fullgraph=True, mode=mode)
    for _ in range(3):
        host = rng.standard_normal((32, 50))
        t = torch.from_numpy(host).cuda()
        got = compiled(t)
        want = host.sum() * 2 + host.max(axis=0).sum() + np.cumsum(host, axis=1)[:, -1].mean() \
            + host.var(axis=1, ddof=1).sum()
        assert isinstance(got, torch.Tensor) and got.shape == ()
        assert float(got) == pytest.approx(want, rel=1e-10)


def _segmented_reference(host, starts, stops):
    sums = np.stack([host[a:b].sum(axis=0) for a, b in zip(starts, stops)])
    argmax = np.stack([host[a:b].argmax(axis=0) if b > a else np.full(host.shape[1], -1) for a, b in zip(starts, stops)])
    return sums, argmax


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_torch_compile_keeps_the_segmented_reductions_in_the_graph(mode, rng):
    """segmented_reduce on tensors with tensor bounds is torch.ops.gpureduce.segmented: fullgraph compiles, and
    with reduce-overhead its CUDA graph replays on new data and new bounds in the same tensors' places."""
    torch = _torch_with_custom_ops()

    def f(t, starts, stops):
        return gpureduce.segmented_reduce("sum", t, starts, stops) * 2 + \
            gpureduce.segmented_reduce("argmax", t, starts, stops, axis=0)

    compiled = torch.compile(f, fullgraph=True, mode=mode)
    for starts, stops in [([0, 5, 20, 20], [5, 20, 32, 20]), ([1, 0, 30, 7], [9, 32, 31, 7])] * 2:
        host = rng.integers(-20, 20, (32, 50)).astype(np.float64)
        got = compiled(torch.from_numpy(host).cuda(), torch.tensor(starts, device="cuda"),
                       torch.tensor(stops, device="cuda"))
        sums, argmax = _segmented_reference(host, starts, stops)
        assert isinstance(got, torch.Tensor) and got.shape == (4, 50)
        np.testing.assert_array_equal(got.cpu().numpy(), sums * 2 + argmax)


def test_torch_compile_keeps_reduceat_in_the_graph(rng):
    """reduceat with tensor indices compiles without a graph break (its device indices are checked with one wait,
    so it is not for a captured CUDA graph: segmented_reduce is)."""
    torch = _torch_with_custom_ops()
    compiled = torch.compile(lambda t, idx: gpureduce.reduceat("max", t, idx, axis=1) + 1, fullgraph=True)
    host = rng.standard_normal((8, 40))
    got = compiled(torch.from_numpy(host).cuda(), torch.tensor([0, 10, 3, 39], device="cuda"))
    np.testing.assert_array_equal(got.cpu().numpy(), np.maximum.reduceat(host, [0, 10, 3, 39], axis=1) + 1)


def test_torch_compile_keeps_the_segmented_scans_in_the_graph(rng):
    """segmented_scan on tensors with tensor bounds is torch.ops.gpureduce.segmented_scan: fullgraph compiles (the
    ranges' check waits once, so not for a captured CUDA graph)."""
    torch = _torch_with_custom_ops()

    def f(t, starts, stops):
        return gpureduce.segmented_scan("sum", t, starts, stops) * 2 + \
            gpureduce.segmented_scan("max", t, starts, stops, exclusive=True)

    compiled = torch.compile(f, fullgraph=True)
    for starts, stops in [([0, 5, 20], [5, 20, 32]), ([9, 0, 30], [30, 9, 31])]:
        host = rng.integers(-20, 20, 32).astype(np.float64)
        got = compiled(torch.from_numpy(host).cuda(), torch.tensor(starts, device="cuda"),
                       torch.tensor(stops, device="cuda"))
        want = np.zeros(32)
        want[:] = 0 * 2 - np.inf  # positions in no range: sum's 0 and max's -inf
        for a, b in zip(starts, stops):
            part = host[a:b]
            before = np.concatenate([[-np.inf], np.maximum.accumulate(part)[:-1]])
            want[a:b] = np.cumsum(part) * 2 + before
        assert isinstance(got, torch.Tensor) and got.shape == (32,)
        np.testing.assert_array_equal(got.cpu().numpy(), want)
