"""Results and out= on the caller's stream, and the operands' and results' memory held as long as some stream may
still read it (issue 36, "silent wrong answers").

Each test makes the wrong order certain rather than likely: a kernel that spins for about 0.1 s holds back the
stream the old code ran on (the legacy default stream for CuPy and other DLPack producers), while the caller's
non-blocking stream goes on.  How each failed at 8b41dfc is in its docstring.
"""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpureduce
from conftest import DLPackOnly, _cupy, _torch
from gpureduce import _core

pytestmark = pytest.mark.gpu

_SPIN = r"""
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
}
"""
SPIN_CYCLES = 200_000_000  # about 0.1 s at 2 GHz: far longer than anything the tests enqueue behind it


def _spin(cp, stream):
    """Hold `stream` back for about 0.1 s."""
    kernel = cp.RawKernel(_SPIN, "spin")
    with stream:
        kernel((1,), (1,), (np.int64(SPIN_CYCLES),))


class CAINoStream:
    """A device array known only by a CUDA Array Interface naming no stream (as Numba's default-stream arrays do)."""

    def __init__(self, array):
        self.array = array
        cai = dict(array.__cuda_array_interface__)
        cai["stream"] = None
        self.__cuda_array_interface__ = cai


def test_cupy_out_on_a_non_blocking_stream_is_written_before_cupy_reads_it():
    """The issue's case.  At 8b41dfc the work ran on the legacy stream and nothing ordered CuPy's stream after it:
    out[-1].get() gave -5."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(2**26, cp.int32)
        out = cp.full(2**26, -5, cp.int64)
        _spin(cp, cp.cuda.Stream.null)
        gpureduce.cumsum(x, out=out)
        assert int(out[-1].get()) == 2**26
        out2 = cp.full((64,), -5, cp.int64)
        gpureduce.sum(x.reshape(64, -1), axis=1, out=out2)
        assert (out2.get() == 2**26 // 64).all()
    s.synchronize()


@pytest.mark.parametrize("kind", ["cupy", "dlpack", "cai"])
def test_an_input_freed_at_return_is_not_reused_under_the_kernel(kind):
    """A temporary input dropped when the call returns, its memory handed at once to a new array of 7s on the
    caller's stream.  At 8b41dfc the kernel, held back on the legacy stream (the device's stream for the CUDA Array
    Interface), read the 7s: CuPy was told the legacy stream and its memory pool reused the block on its own stream
    (an out= result: a CuPy result orders CuPy's stream after the work, which hid it); a DLPack or CUDA Array
    Interface producer was let go of as run() returned (suspect 3)."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    rows, n = 1024, 2**24
    want = np.arange(n, dtype=np.int64).reshape(rows, -1).sum(axis=1)
    with s:
        x = cp.arange(n, dtype=cp.int64)
        s.synchronize()
        _spin(cp, cp.cuda.Stream.null)
        view = x.reshape(rows, -1)
        wrapped = {"cupy": view, "dlpack": DLPackOnly(view), "cai": CAINoStream(view)}[kind]
        if kind == "cupy":
            r = gpureduce.sum(wrapped, axis=1, out=cp.empty(rows, cp.int64))
        else:
            r = gpureduce.sum(wrapped, axis=1)
        kept = _core.resource_stats().get("operands_kept", 0)
        del x, view, wrapped
        ys = [cp.full(n, 7, cp.int64) for _ in range(8)]  # CuPy's pool gives one of them x's block
        cp.cuda.Device().synchronize()  # every stream done: only what the kernel read can be wrong
        got = r.get()
        np.testing.assert_array_equal(got, want)
        assert kind == "cupy" or kept >= 1, "the operands of an asynchronous call were let go at once"
        del ys
    s.synchronize()


def test_a_device_array_is_freed_after_its_consumers_reads():
    """A gpureduce.DeviceArray result read by CuPy on a non-blocking stream, dropped while that read still waits;
    the next result of the same size is made on the array's own stream, from a pool emptied first.  The array's
    memory must not be handed to that result before CuPy has read it (suspect 2: at 8b41dfc it went back to its
    stream's pool at once; this test did not catch that there: the issue 36 GPU check, in git's history of
    benchmarks/results/device_check_h200.md)."""
    cp = _cupy()
    n = 2**22  # integer-valued float32 sums below 2**24: exact in any order
    src = (cp.arange(n, dtype=cp.int32) % 2).astype(cp.float32)
    other = cp.ones(n, cp.float32)
    cp.cuda.Device().synchronize()
    # gpureduce's results come from the device's default pool: emptied first, the block r frees is the one free
    # block there, which the pool hands to the next result of its size on the stream it was freed on
    cp.cuda.runtime.memPoolTrimTo(cp.cuda.runtime.deviceGetDefaultMemPool(cp.cuda.Device().id), 0)
    r = gpureduce.cumsum(DLPackOnly(src))  # stays a DeviceArray (an unknown DLPack producer)
    want = np.cumsum(cp.asnumpy(src), dtype=np.float64).astype(np.float32)
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        c = cp.from_dlpack(r)
        _spin(cp, s)
        c2 = c * 1  # behind the spin
    del c, r
    # results of the same size on the legacy stream, each writing its block at once: one takes the freed block
    # (sixteen, so that other free blocks of that size in the pool cannot all come first)
    later = [gpureduce.cumsum(DLPackOnly(other)) for _ in range(16)]
    s.synchronize()
    np.testing.assert_array_equal(cp.asnumpy(c2), want)
    assert all(float(r2.get()[-1]) == n for r2 in later)


def test_torch_side_stream_results_and_out():
    """PyTorch on a side stream: the work runs there, out= and array results are ready for what PyTorch does next."""
    torch = _torch()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        x = torch.ones(2**24, dtype=torch.int32, device="cuda")
        out = torch.full((2**24,), -5, dtype=torch.int64, device="cuda")
        torch.cuda._sleep(SPIN_CYCLES)
        gpureduce.cumsum(x, out=out)
        r = gpureduce.cumsum(x.view(256, -1), axis=1)
        assert int(out[-1].item()) == 2**24
        assert int(r[:, -1].sum().item()) == 2**24
    side.synchronize()


def test_unknown_dlpack_out_is_complete_on_return():
    """out= from a DLPack producer whose stream gpureduce cannot know: the call completes before it returns, so a
    read on any stream sees the values.  At 8b41dfc a read on CuPy's non-blocking stream came first."""
    cp = _cupy()
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        x = cp.ones(2**24, cp.int32)
        out = cp.full(2**24, -5, cp.int64)
        s.synchronize()
        _spin(cp, cp.cuda.Stream.null)
        gpureduce.cumsum(DLPackOnly(x), out=DLPackOnly(out))
        assert int(out[-1].get()) == 2**24
    s.synchronize()


def _run_script(body, timeout=90):
    """Run `body` in a fresh interpreter (a hang or a crash fails the test, not the suite): its exit code and
    output, -1 and what it printed when it ran out of time."""
    code = textwrap.dedent(body)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    except subprocess.TimeoutExpired as exc:
        said = [x.decode(errors="replace") if isinstance(x, bytes) else x or "" for x in (exc.stdout, exc.stderr)]
        return -1, f"timed out after {timeout} s\n" + "".join(said)
    return done.returncode, done.stdout + done.stderr


def test_per_thread_default_streams_never_share_a_workspace():
    """Two threads scan one after the other on their own per-thread default streams (CUDA Array Interface stream
    2), each held back by one gate, so that the second call takes the execution context the first has just let go
    of and both scans start together when the gate opens.  At 8b41dfc equal stream handles (2) made the second
    skip its wait for the first, and both scans counted their tiles in one workspace at once (suspect 4).  The
    threads live until their results are read.  Run in a subprocess: a broken look-back can spin forever."""
    rc, out = _run_script("""
        import faulthandler, threading, numpy as np, cupy as cp, gpureduce
        faulthandler.dump_traceback_later(75, exit=True)
        GATE = r'''extern "C" __global__ void gate(const volatile int *flag, long long cycles) {
            long long t = clock64(); while (*flag == 0 && clock64() - t < cycles) { } }'''
        gate = cp.RawKernel(GATE, "gate")
        flag_mem = cp.cuda.alloc_pinned_memory(4)
        flag = np.frombuffer(flag_mem, np.int32, 1)
        args = (np.uint64(flag_mem.ptr), np.int64(2_000_000_000))  # at most 1-4 s, by the clock
        per_thread = cp.cuda.ExternalStream(2)  # the calling thread's per-thread default stream
        n = 2**26
        class CAI:
            def __init__(self, cai):
                self.__cuda_array_interface__ = dict(cai, stream=2)
        for round in range(4):
            xs = [cp.arange(n, dtype=cp.int32) % (3 + i) for i in range(2)]
            wants = [np.cumsum(cp.asnumpy(x), dtype=np.int64) for x in xs]
            cais = [CAI(x.__cuda_array_interface__) for x in xs]
            cp.cuda.Device().synchronize()
            flag[0] = 0
            results, errors = [None, None], []
            called = [threading.Event(), threading.Event()]
            read = threading.Event()
            def work(i):
                try:
                    if i == 1:
                        called[0].wait()
                    gate((1,), (1,), args, stream=per_thread)
                    results[i] = gpureduce.cumsum(cais[i])  # asynchronous: queued behind the gate
                except BaseException as exc:
                    errors.append(repr(exc))
                finally:
                    called[i].set()
                read.wait()  # the thread, and its per-thread stream, live until the results are read
            threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
            for t in threads:
                t.start()
            called[1].wait()
            flag[0] = 1  # both scans start now
            assert not errors, errors
            gots = [r.get() for r in results]
            read.set()
            for t in threads:
                t.join()
            for got, want in zip(gots, wants):
                assert (got == want).all(), f"round {round}: wrong from {np.flatnonzero(got != want)[:5]}"
            print("round", round, "ok", flush=True)
        print("ok")
    """)
    assert rc == 0 and "\nok" in out, out


def test_a_dirty_workspace_is_zeroed_on_the_calls_stream():
    """A call that fails after taking the execution context (a 512 GiB result) leaves its workspace to be zeroed
    before the next use, while the previous call's scan (into out=) still runs on a PyTorch side stream and counts
    its tiles in that workspace.  At 8b41dfc the next call zeroed it with a cudaMemset on the legacy stream, which a PyTorch
    stream does not wait for: the memset reset the running scan's tile counter in the middle of the kernel
    (suspect 1).  Run in a subprocess: a broken look-back can spin forever."""
    _torch()
    rc, out = _run_script("""
        import faulthandler, numpy as np, torch, gpureduce
        faulthandler.dump_traceback_later(80, exit=True)
        side = torch.cuda.Stream()
        x = torch.randint(-1000, 1000, (2**28,), dtype=torch.int64, device="cuda")  # a scan of about 1 ms
        want = torch.cumsum(x, 0).cpu().numpy()
        huge = torch.ones(1, device="cuda").expand(2**37, 2)  # its row sums want 512 GiB
        small = torch.ones(1000, device="cuda")
        got = torch.empty_like(x)
        torch.cuda.synchronize()
        for round in range(10):
            with torch.cuda.stream(side):
                # asynchronous, into out=: no stream but the side stream's is ordered after the scan, which is
                # running when the next calls come
                gpureduce.cumsum(x, out=got)
            try:
                gpureduce.sum(huge, axis=1)
                raise AssertionError("a 512 GiB result was made")
            except MemoryError:
                pass  # the context it took is now marked dirty
            with torch.cuda.stream(side):
                gpureduce.sum(small, axis=0, keepdims=True)  # takes that context: its workspace is zeroed
            side.synchronize()
            bad = np.flatnonzero(got.cpu().numpy() != want)
            assert bad.size == 0, f"round {round}: wrong from {bad[:5]}"
        print("ok")
    """)
    assert rc == 0 and "ok" in out, out


def test_to_device_reads_its_input_once():
    """An __array__ that answers differently each time: to_device copies what the intake read.  At 8b41dfc it
    converted the input twice and copied the first conversion's byte count out of the second's (a 1-element
    array), reading past it (suspect 5)."""
    calls = []

    class Shifty:
        def __array__(self, dtype=None, copy=None):
            calls.append(1)
            return np.arange(1000, dtype=np.float64) if len(calls) == 1 else np.zeros(1)

    got = _core.to_device(Shifty()).get()
    np.testing.assert_array_equal(got, np.arange(1000, dtype=np.float64))


def test_one_type_error_does_not_make_a_producer_unversioned():
    """A producer whose __dlpack__ raises TypeError for one array (not about max_version) is still asked for a
    versioned capsule for the next.  At 8b41dfc the first TypeError marked the whole type unversioned for the
    process, and its read-only flag (versioned capsules only) was lost from then on (suspect 6)."""
    cp = _cupy()

    class Producer:
        asked = []

        def __init__(self, array, refuse):
            self.array, self.refuse = array, refuse

        def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
            Producer.asked.append(max_version)
            if self.refuse:
                raise TypeError("this array cannot be exported")
            return self.array.__dlpack__(stream=stream, max_version=max_version)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    x = cp.arange(10, dtype=cp.float32)
    with pytest.raises(TypeError, match="cannot be exported"):
        gpureduce.sum(Producer(x, refuse=True))
    Producer.asked.clear()
    assert float(gpureduce.sum(Producer(x, refuse=False))) == 45.0
    assert Producer.asked and Producer.asked[0] is not None, Producer.asked


def test_a_memory_error_at_the_first_dlpack_call_leaves_nothing_half_made():
    """Each allocation of the first DLPack intake made to fail in turn, each in a fresh child process, then the
    same intake again: the child never crashes.  At 8b41dfc a failure while making the cache of unversioned
    producers left it NULL, and the next call dereferenced it (a segmentation fault; suspect 6)."""
    rc, out = _run_script("""
        import os, signal, sys
        try:
            import _testcapi
        except ImportError:
            print("skip: no _testcapi"); sys.exit(0)
        import cupy as cp
        from gpureduce import _core
        class P:
            def __init__(self, a): self.a = a
            def __dlpack__(self, **kw): return self.a.__dlpack__(**kw)
            def __dlpack_device__(self): return self.a.__dlpack_device__()
        p = P(cp.arange(10, dtype=cp.float32))
        crashed = []
        for k in range(0, 120):
            pid = os.fork()
            if pid == 0:  # the child: no CUDA call before the allocation under test
                signal.alarm(10)
                _testcapi.set_nomemory(k, k + 1)
                try:
                    _core.intake(p)
                except BaseException:
                    pass
                finally:
                    _testcapi.remove_mem_hooks()
                try:
                    _core.intake(p)  # may fail for CUDA's sake in a forked child; must not crash
                except BaseException:
                    pass
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS):
                crashed.append((k, os.WTERMSIG(status)))
        print("crashed:", crashed)
        print("ok" if not crashed else "crash")
    """)
    if "skip: no _testcapi" in out:
        pytest.skip("this Python has no _testcapi to fail allocations with")
    assert rc == 0 and "\nok" in out, out


def test_a_second_module_instance_keeps_the_streams_of_the_first():
    """A second instance of gpureduce._core (loaded again from its file), freed while the first lives: the first's
    arrays and calls still work.  At 8b41dfc freeing any instance destroyed the process's streams and execution
    contexts, which the other used (its DeviceArray's stream was gone: cudaErrorInvalidResourceHandle, suspect 7).
    A subinterpreter's import is refused, so destroying the subinterpreter frees nothing of the main one's."""
    rc, out = _run_script("""
        import gc, importlib.util
        import numpy as np
        import gpureduce
        from gpureduce import _core
        keep = _core.to_device(np.arange(1000, dtype=np.float32))
        spec = importlib.util.spec_from_file_location("gpureduce._core", _core.__file__)
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
        assert other is not _core
        t = other.to_device(np.ones(10, np.float32))
        del t, other, spec
        gc.collect()
        import cupy as cp  # as a CUDA Array Interface consumer, it synchronises the stream the array names
        assert float(cp.asarray(keep).sum()) == 499500.0
        assert float(keep.get().sum()) == 499500.0
        assert float(gpureduce.cumsum(keep).get()[-1]) == 499500.0
        try:
            import _xxsubinterpreters as interpreters
        except ImportError:
            interpreters = None
        if interpreters is not None:
            interp = interpreters.create()
            try:
                interpreters.run_string(interp, "import gpureduce._core")
                print("a subinterpreter imported gpureduce._core")
            except Exception as exc:
                print("subinterpreter:", type(exc).__name__, str(exc)[:200])
            finally:
                interpreters.destroy(interp)
            gc.collect()
            assert float(keep.get().sum()) == 499500.0
            assert float(gpureduce.sum(keep)) == 499500.0
        print("ok")
    """)
    assert rc == 0 and "ok" in out, out
    assert "a subinterpreter imported gpureduce._core" not in out, out
