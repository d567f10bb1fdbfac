"""Faults and interruptions: every case runs in a fresh Python process, so a crash or a hang fails its test
instead of killing (or stalling) the pytest session.

The child process prints one ``RESULT {json}`` line of what it observed; the parent asserts.  In every case:

* the child survives: exit status 0, no signal (PYTHONFAULTHANDLER=1 prints the stack of a crash);
* the expected exception type was raised, with a message naming what was wrong;
* the NEXT calls in the same child give the right answers (a host ``sum`` and a device-input ``cumsum``
  checked against NumPy): an error must leave gpureduce, and the CUDA context, usable.

The cases:

1. Requests larger than the device's memory (a 1 TiB scan of a zero-stride broadcast, on the device and on
   the host; ``_core.empty`` of 4 TiB) raise ``gpureduce.CudaError`` or ``MemoryError`` naming the size, and
   leave the memory pool as it was.
2. KeyboardInterrupt during a long call (a host cumsum of 2^30 float32, 4 GiB): it arrives within 5 s of the
   SIGINT, the memory pool goes back to its level before the call, the next call works.  A KeyboardInterrupt
   raised inside a protocol method (``__dlpack__``...) reaches the caller as KeyboardInterrupt.
3. CUDA Array Interface and DLPack exporters that lie (a host pointer, a null pointer, a shape or strides
   beyond the allocation, a used capsule, a zero-stride or read-only ``out=``, a malformed field) get a clear
   exception (ValueError / TypeError / CudaError) before any launch, never a crash.
4. Property tests (hypothesis, ~300 examples each, in a child process): random ``__cuda_array_interface__``
   dicts and random DLPack exporters give only TypeError, ValueError, OverflowError or CudaError, or a result
   equal to NumPy's on the same memory (read through CuPy) where the description is valid and lies within a
   live allocation.

Device memory the tests describe is allocated through the CUDA driver API (ctypes, libcuda.so.1) in the
runtime's primary context, so the allocation the driver reports (cuMemGetAddressRange) is exactly the one
made; CuPy is needed only where a case is about CuPy (broadcast views, DLPack capsules, the property tests).
"""
import json
import os
import queue
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import gpureduce
from conftest import count_example

pytestmark = pytest.mark.gpu

CHILD_TIMEOUT = 120  # seconds a child may run (the interrupt cases included) before it counts as hung
INTERRUPT_LATENCY_LIMIT = 5.0  # seconds from SIGINT to the KeyboardInterrupt in the child
PROPERTY_EXAMPLES = 300
PROPERTY_TIMEOUT = 600
# the directory gpureduce was imported from: the child imports the same tree (built in place or installed)
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(gpureduce.__file__)))


# ---------------------------------------------------------------- the child process

# Common to every child: reporting, outcomes, the driver API, the next-call check.
PRELUDE = r'''
import ctypes, json, os, re, signal, sys, time, traceback
import numpy as np
import gpureduce
from gpureduce import _core
from gpureduce.testing import to_numpy

DEVICE = _core.device_properties()["device"]


def report(**fields):
    print("RESULT " + json.dumps(fields, default=repr), flush=True)


def outcome(fn):
    """What calling fn() did: {"raised": None, "value": ...} or {"raised": <type name>, "message": ...}."""
    try:
        value = fn()
    except BaseException as e:  # KeyboardInterrupt included: some cases are about it
        if isinstance(e, SystemExit):
            raise
        return {"raised": type(e).__name__, "message": str(e), "cuda_error": isinstance(e, gpureduce.CudaError),
                "memory_error": isinstance(e, MemoryError), "value_error": isinstance(e, ValueError),
                "type_error": isinstance(e, TypeError), "overflow_error": isinstance(e, OverflowError),
                "keyboard_interrupt": isinstance(e, KeyboardInterrupt),
                "where": [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}"
                          for f in traceback.extract_tb(e.__traceback__)[-3:]]}
    try:
        host = to_numpy(value)
        summary = {"shape": list(host.shape), "dtype": str(host.dtype),
                   "values": host.ravel()[:8].tolist() if host.dtype.kind != "c" else repr(host.ravel()[:8])}
    except Exception as e:
        summary = f"<{type(value).__name__}: not readable: {e!r}>"
    return {"raised": None, "value": summary, "type": type(value).__name__, "_result": value}


def public(o):
    """An outcome without the live result (for JSON)."""
    return {k: v for k, v in o.items() if k != "_result"}


class CAI:
    """Exports the given dict as __cuda_array_interface__ (an instance attribute), and nothing else."""

    def __init__(self, description, keep=None):
        self.__cuda_array_interface__ = description
        self.keep = keep


class Driver:
    """The CUDA driver API through ctypes, in the device's primary context (the CUDA runtime's, gpureduce's)."""

    def __init__(self):
        lib = ctypes.CDLL("libcuda.so.1")
        u64, size_t, P = ctypes.c_uint64, ctypes.c_size_t, ctypes.POINTER
        signatures = {
            "cuInit": [ctypes.c_uint],
            "cuDevicePrimaryCtxRetain": [P(ctypes.c_void_p), ctypes.c_int],
            "cuCtxSetCurrent": [ctypes.c_void_p],
            "cuCtxSynchronize": [],
            "cuMemAlloc_v2": [P(u64), size_t],
            "cuMemFree_v2": [u64],
            "cuMemGetAddressRange_v2": [P(u64), P(size_t), u64],
            "cuMemcpyHtoD_v2": [u64, ctypes.c_void_p, size_t],
            "cuMemcpyDtoH_v2": [ctypes.c_void_p, u64, size_t],
        }
        for name, argtypes in signatures.items():
            f = getattr(lib, name)
            f.argtypes = argtypes
            f.restype = ctypes.c_int
        self.lib = lib
        self.check(lib.cuInit(0), "cuInit")
        ctx = ctypes.c_void_p()
        self.check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), DEVICE), "cuDevicePrimaryCtxRetain")
        self.check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    @staticmethod
    def check(rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed: CUresult {rc}")

    def alloc(self, nbytes):
        p = ctypes.c_uint64()
        self.check(self.lib.cuMemAlloc_v2(ctypes.byref(p), nbytes), "cuMemAlloc")
        return p.value

    def free(self, p):
        self.check(self.lib.cuMemFree_v2(p), "cuMemFree")

    def range(self, p):
        """(base, size) of the allocation holding device pointer p, as the driver records it."""
        base, size = ctypes.c_uint64(), ctypes.c_size_t()
        self.check(self.lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), p),
                   "cuMemGetAddressRange")
        return base.value, size.value

    def upload(self, p, host):
        host = np.ascontiguousarray(host)
        self.check(self.lib.cuMemcpyHtoD_v2(p, host.ctypes.data, host.nbytes), "cuMemcpyHtoD")

    def download(self, p, nbytes):
        buf = np.empty(nbytes, np.uint8)
        self.check(self.lib.cuMemcpyDtoH_v2(buf.ctypes.data, p, nbytes), "cuMemcpyDtoH")
        return buf

    def sync(self):
        self.check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


_driver = []


def driver():
    if not _driver:
        _driver.append(Driver())
    return _driver[0]


def pool_in_use():
    """Bytes of the device's default memory pool in use, all enqueued work done."""
    driver().sync()
    return _core.resource_stats()["pool_in_use"]


def pool_back_to(level, wait_s=2.0):
    """pool_in_use() once it equals `level`, or its value after wait_s seconds (frees are stream-ordered)."""
    end = time.monotonic() + wait_s
    while True:
        now = pool_in_use()
        if now == level or time.monotonic() > end:
            return now
        time.sleep(0.05)


def next_call():
    """The next calls in this process give the right answers: {check: True, or what went wrong}."""
    checks = {}
    try:
        got = gpureduce.sum(np.arange(1000))
        checks["host_sum"] = True if int(got) == 499500 else f"gave {got!r}"
    except BaseException as e:
        checks["host_sum"] = f"{type(e).__name__}: {e}"
    host = np.random.default_rng(1).integers(-1000, 1000, 4097).astype(np.float32)  # partial sums exact in float32
    devices = {"device_cumsum": lambda: _core.to_device(host)}
    if "cupy" in sys.modules:
        devices["cupy_cumsum"] = lambda: sys.modules["cupy"].asarray(host)
    for name, make in devices.items():
        try:
            got = to_numpy(gpureduce.cumsum(make()))
            checks[name] = True if np.array_equal(got, np.cumsum(host)) else f"gave {got[:5]!r}..."
        except BaseException as e:
            checks[name] = f"{type(e).__name__}: {e}"
    return checks
'''


def _child_env():
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONFAULTHANDLER": "1",
            "PYTHONPATH": PACKAGE_PARENT + (os.pathsep + path if path else "")}


def _describe_exit(returncode):
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = str(-returncode)
        return f"the child process was killed by signal {name}"
    return f"the child process exited with status {returncode}"


def _result_of(returncode, stdout, stderr):
    """The child's RESULT, with its output attached under "_output" for assertion messages."""
    output = (f"\n---- child stdout (end) ----\n{stdout[-3000:]}\n---- child stderr (end) ----\n"
              f"{stderr[-6000:]}")
    assert returncode == 0, _describe_exit(returncode) + output
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, "the child printed no RESULT line" + output
    result = json.loads(lines[-1][len("RESULT "):])
    result["_output"] = output
    return result


def _text(output):
    """A TimeoutExpired's partial output (bytes even in text mode, or None) as text."""
    return output.decode(errors="replace") if isinstance(output, bytes) else (output or "")


def child(*parts):
    """The child's code: PRELUDE and `parts` (each dedented on its own), one after the other."""
    return "\n".join([PRELUDE] + [textwrap.dedent(part) for part in parts]) + "\n"


def run_child(*parts, timeout=CHILD_TIMEOUT, cwd=None):
    """Run PRELUDE + parts in a fresh interpreter; its RESULT dict (asserting it exited cleanly)."""
    code = child(*parts)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout,
                              env=_child_env(), cwd=cwd)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the child process hung: no exit within {timeout} s\n---- stdout ----\n{_text(e.stdout)[-3000:]}\n"
                    f"---- stderr ----\n{_text(e.stderr)[-6000:]}")
    return _result_of(done.returncode, done.stdout, done.stderr)


def assert_next_call_ok(result):
    bad = {k: v for k, v in result["next"].items() if v is not True}
    assert not bad, f"the next call in the same process went wrong: {bad}" + result["_output"]


def names_size(message, nbytes):
    """True when `message` names the size `nbytes`: the byte count (digits may be grouped by ',', '_', ' ' or
    "'"), or a human size ("1.00 TiB", "4 TB", "1.1 TB") within the rounding of its printed digits (binary or
    decimal units)."""
    plain = re.sub(r"(?<=\d)[,_' ](?=\d{3}(?!\d))", "", message)
    if re.search(rf"(?<![\d.]){nbytes}(?![\d.])", plain):
        return True
    for m in re.finditer(r"(?<![\w.])(\d+(?:\.(\d+))?)\s*([KMGTPE]?)(i?)(B|bytes?)\b", plain, flags=re.IGNORECASE):
        value, decimals, prefix = float(m.group(1)), len(m.group(2) or ""), m.group(3).lower()
        half_digit = 0.5 * 10.0**-decimals
        for base in (1024, 1000):
            scale = base ** " kmgtpe".index(prefix) if prefix else 1
            if abs(value - nbytes / scale) <= max(half_digit, 0.005 * value):
                return True
    return False


def assert_raised(got, kinds, pattern, output, *, what):
    """`got` (an outcome) raised one of `kinds` ("value_error", "type_error", "cuda_error", "memory_error",
    "overflow_error") with a message matching `pattern`."""
    assert got["raised"] is not None, f"{what}: no exception; it returned {got.get('value')!r}" + output
    assert any(got.get(k) for k in kinds), (
        f"{what}: raised {got['raised']} ({got['message']}), expected one of {kinds}" + output)
    assert re.search(pattern, got["message"]), (
        f"{what}: the {got['raised']} message does not say what was wrong (expected /{pattern}/): "
        f"{got['message']!r}" + output)


# ---------------------------------------------------------------- 1. requests beyond the device's memory

TIB_RESULT = 2**38  # float32 elements: a 1 TiB result
TIB_BYTES = TIB_RESULT * 4


def _assert_oom(result, nbytes, what):
    got = result["got"]
    assert got["raised"] is not None, f"{what}: returned {got.get('value')!r} instead of failing" + result["_output"]
    assert got["cuda_error"] or got["memory_error"], (
        f"{what}: raised {got['raised']} ({got['message']}); expected gpureduce.CudaError or MemoryError"
        + result["_output"])
    assert names_size(got["message"], nbytes), (
        f"{what}: the message does not name the size ({nbytes} bytes): {got['message']!r}" + result["_output"])
    assert result["pool_after"] == result["pool_before"], (
        f"{what}: the failed call left {result['pool_after'] - result['pool_before']} bytes of the memory pool in "
        f"use" + result["_output"])
    assert_next_call_ok(result)


@pytest.mark.parametrize("source", ["cupy", "cuda_array_interface"])
def test_device_scan_beyond_device_memory_names_the_size(source):
    """cumsum of a 2^38-element zero-stride broadcast of one device float32 (4 bytes of memory, a 1 TiB result)
    raises CudaError or MemoryError naming the size (exec.c's "allocating <n> bytes of device memory")."""
    if source == "cupy":
        pytest.importorskip("cupy")
        make = "import cupy as cp\nx = cp.broadcast_to(cp.ones((), dtype=cp.float32), (TIB_RESULT,))\n"
    else:
        make = ("one = _core.to_device(np.ones(1, np.float32))\n"
                "x = CAI({'shape': (TIB_RESULT,), 'strides': (0,), 'typestr': '<f4', 'version': 3,\n"
                "         'data': (one.__cuda_array_interface__['data'][0], False)}, keep=one)\n")
    result = run_child(f"TIB_RESULT = {TIB_RESULT}", make, """
        before = pool_in_use()
        got = outcome(lambda: gpureduce.cumsum(x))
        report(got=public(got), pool_before=before, pool_after=pool_back_to(before), next=next_call())
    """)
    _assert_oom(result, TIB_BYTES, f"cumsum of a {source} broadcast of {TIB_RESULT} float32")


def test_host_scan_beyond_memory_names_the_size():
    """cumsum of numpy.broadcast_to(float32(1), (2^38,)): the 1 TiB host result cannot be allocated (NumPy's
    MemoryError, "Unable to allocate 1.00 TiB ...") or, where the kernel overcommits host memory, its 1 TiB of
    device memory cannot (gpureduce.OutOfMemoryError): either names the size, and no host page is touched."""
    result = run_child(f"TIB_RESULT = {TIB_RESULT}", """
        x = np.broadcast_to(np.float32(1), (TIB_RESULT,))
        before = pool_in_use()
        got = outcome(lambda: gpureduce.cumsum(x))
        report(got=public(got), pool_before=before, pool_after=pool_back_to(before), next=next_call())
    """)
    _assert_oom(result, TIB_BYTES, f"cumsum of a NumPy broadcast of {TIB_RESULT} float32")


def test_empty_beyond_device_memory_names_the_size():
    """_core.empty((2^40,), "float32"): 4 TiB of device memory."""
    result = run_child("""
        before = pool_in_use()
        got = outcome(lambda: _core.empty((2**40,), "float32"))
        report(got=public(got), pool_before=before, pool_after=pool_back_to(before), next=next_call())
    """)
    _assert_oom(result, 2**40 * 4, "_core.empty((2**40,), 'float32')")


# ---------------------------------------------------------------- 2. KeyboardInterrupt

INTERRUPT_CHILD = """
    import threading
    signal.signal(signal.SIGINT, signal.default_int_handler)  # whatever the parent's disposition was
    a = np.ones(2**30, np.float32)  # 4 GiB
    gpureduce.cumsum(np.ones(10, np.float32))  # CUDA initialised, the small buffers made
    t = time.monotonic()
    r = gpureduce.cumsum(a)
    full_call_s = time.monotonic() - t
    r = None
    before = pool_in_use()
    fired = []
    if MODE == "timer":
        def fire():
            fired.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGINT)
        threading.Timer(0.3, fire).start()
    calls, caught, where = 0, None, None
    deadline = time.monotonic() + 60
    try:
        print("started", flush=True)
        while time.monotonic() < deadline:
            r = gpureduce.cumsum(a)
            r = None
            calls += 1
    except KeyboardInterrupt as e:
        caught = time.monotonic()
        where = [f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} {f.name}" for f in traceback.extract_tb(e.__traceback__)]
    r = None
    report(mode=MODE, calls=calls, full_call_s=full_call_s, signalled=fired[0] if fired else None, caught=caught,
           where=where, pool_before=before, pool_after=pool_back_to(before), next=next_call())
"""


def _run_interrupted(mode):
    """The interrupt child; SIGINT sent by the parent after "started" and 0.3 s ("parent"), or by a timer thread in
    the child 0.3 s after it starts the loop ("timer").  Returns (result, seconds from the signal to the
    KeyboardInterrupt): time.monotonic() is CLOCK_MONOTONIC, one clock for every process of the machine."""
    code = child(f"MODE = {mode!r}", INTERRUPT_CHILD)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=_child_env())
    lines, errors = queue.Queue(), []

    def read_stdout():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    readers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=lambda: errors.extend(proc.stderr), daemon=True)]
    for reader in readers:
        reader.start()
    stdout, sent = [], None
    end = time.monotonic() + CHILD_TIMEOUT
    try:
        while True:  # until "started" (or the child's end)
            line = lines.get(timeout=max(0.1, end - time.monotonic()))
            if line is None:
                break
            stdout.append(line)
            if line.strip() == "started":
                if mode == "parent":
                    time.sleep(0.3)
                    sent = time.monotonic()
                    proc.send_signal(signal.SIGINT)
                break
        proc.wait(timeout=max(1.0, end - time.monotonic()))
    except (queue.Empty, subprocess.TimeoutExpired):
        proc.kill()
        proc.wait()
        for reader in readers:
            reader.join(timeout=10)
        pytest.fail(f"the interrupted child hung (no exit within {CHILD_TIMEOUT} s)\n---- stdout ----\n"
                    f"{''.join(stdout)[-3000:]}\n---- stderr ----\n{''.join(errors)[-6000:]}")
    for reader in readers:
        reader.join(timeout=10)
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            break
        if line is not None:
            stdout.append(line)
    result = _result_of(proc.returncode, "".join(stdout), "".join(errors))
    if mode == "timer":
        sent = result["signalled"]
    assert sent is not None, "the signal was never sent (the child did not print 'started')" + result["_output"]
    assert result["caught"] is not None, (
        f"no KeyboardInterrupt reached the child's loop within 60 s of the SIGINT ({result['calls']} calls of "
        f"{result['full_call_s']:.2f} s each ran): the interrupt was lost" + result["_output"])
    return result, result["caught"] - sent


@pytest.mark.parametrize("sender", ["parent", "timer"])
def test_keyboard_interrupt_during_a_long_host_scan(sender, record_property):
    """SIGINT during gpureduce.cumsum of a 4 GiB host array: KeyboardInterrupt within 5 s, the memory pool back
    to its level before the call, the next call right."""
    result, latency = _run_interrupted(sender)
    where = " <- ".join(reversed(result["where"] or []))
    line = (f"KeyboardInterrupt {latency:.3f} s after SIGINT ({sender}); one uninterrupted call takes "
            f"{result['full_call_s']:.3f} s; {result['calls']} calls completed before; raised at {where}")
    print(line)
    record_property("interrupt_latency_s", round(latency, 4))
    assert latency <= INTERRUPT_LATENCY_LIMIT, line + result["_output"]
    assert result["pool_after"] == result["pool_before"], (
        f"{line}: {result['pool_after'] - result['pool_before']} bytes of the memory pool still in use after the "
        "interrupted call" + result["_output"])
    assert_next_call_ok(result)


@pytest.mark.parametrize("method", ["__dlpack__", "__dlpack_device__", "__cuda_array_interface__", "__array__"])
def test_keyboard_interrupt_inside_a_protocol_method_propagates(method):
    """Ctrl-C while gpureduce asks an exporter for its array (a slow __dlpack__, say) is a KeyboardInterrupt for the
    caller, not a TypeError about the exporter: the intake must not wrap BaseExceptions that are not errors."""
    result = run_child(f"METHOD = {method!r}", """
        host = np.arange(1000, dtype=np.float32)
        dev = _core.to_device(host)

        def interrupt(*args, **kwargs):
            raise KeyboardInterrupt

        if METHOD == "__dlpack__":
            Exporter = type("Exporter", (), {"__dlpack__": interrupt,
                                             "__dlpack_device__": lambda self: dev.__dlpack_device__()})
        elif METHOD == "__dlpack_device__":
            Exporter = type("Exporter", (), {"__dlpack__": lambda self, **kw: dev.__dlpack__(**kw),
                                             "__dlpack_device__": interrupt})
        elif METHOD == "__cuda_array_interface__":
            Exporter = type("Exporter", (), {"__cuda_array_interface__": property(interrupt)})
        else:
            Exporter = type("Exporter", (), {"__array__": interrupt})
        got = {op: public(outcome(lambda op=op: getattr(gpureduce, op)(Exporter()))) for op in ("sum", "cumsum")}
        report(got=got, next=next_call())
    """)
    for op, got in result["got"].items():
        assert got.get("keyboard_interrupt"), (
            f"gpureduce.{op} of an exporter whose {method} raises KeyboardInterrupt raised {got['raised']} "
            f"({got.get('message')!r}) instead of letting the KeyboardInterrupt through" + result["_output"])
    assert_next_call_ok(result)


# ---------------------------------------------------------------- 3. exporters that lie

# A valid description of 1000 float32 (0, 1, ..., 999) in a driver allocation of 4000 bytes at BASE (ALLOC_BYTES:
# its size as the driver records it); OUT is a second one, poisoned with -7, for out= cases.
LIE_SETUP = """
    drv = driver()
    BASE, OUT = drv.alloc(4000), drv.alloc(4000)
    ALLOC_BASE, ALLOC_BYTES = drv.range(BASE)
    OUT_BASE, OUT_BYTES = drv.range(OUT)
    assert (ALLOC_BASE, OUT_BASE) == (BASE, OUT), (hex(ALLOC_BASE), hex(BASE), hex(OUT_BASE), hex(OUT))
    HOST = np.arange(1000, dtype=np.float32)
    drv.upload(BASE, HOST)
    POISON = np.full(OUT_BYTES // 4, -7, np.float32)
    drv.upload(OUT, POISON)


    def valid(ptr=None):
        return {"shape": (1000,), "typestr": "<f4", "data": (BASE if ptr is None else ptr, False), "version": 3,
                "strides": None, "stream": 1}


    def check_valid(x):
        checks = {"sum": lambda: float(gpureduce.sum(x)) == 499500.0,
                  "cumsum": lambda: bool(np.array_equal(to_numpy(gpureduce.cumsum(x)), np.cumsum(HOST))),
                  "max": lambda: float(gpureduce.max(x)) == 999.0}
        done = {}
        for name, check in checks.items():
            try:
                done[name] = check()
            except Exception as e:
                done[name] = f"{type(e).__name__}: {e}"
        return done


    def out_untouched():
        return bool(np.array_equal(drv.download(OUT, OUT_BYTES).view(np.float32), POISON))
"""

# case -> (whose: "input" or "out", the lie (code changing `d`, a valid description), exception kinds, message
# pattern; "ALLOCATION": the span check's wording, and the message must name the allocation's size)
LIES = {
    "host_pointer": ("input", "d['data'] = (HOST.ctypes.data, False)", ("value_error",), r"not device memory"),
    "null_pointer": ("input", "d['data'] = (0, False)", ("value_error",), r"null pointer"),
    "misaligned_pointer": ("input", "d['data'] = (BASE + 2, False)", ("value_error",), r"aligned"),
    "shape_beyond_allocation": ("input", "d['shape'] = (10**6,)", ("value_error",), "ALLOCATION"),
    "strides_beyond_allocation": ("input", "d['strides'] = (4 * (ALLOC_BYTES // 3996 + 2),)", ("value_error",),
                                  "ALLOCATION"),
    "negative_strides_before_allocation": ("input", "d['strides'] = (-4,)", ("value_error",), "ALLOCATION"),
    "pointer_near_the_end": ("input", "d['data'] = (BASE + ALLOC_BYTES - 8, False)", ("value_error",), "ALLOCATION"),
    "shape_overflowing_int64": ("input", "d['shape'] = (2**62, 4)", ("value_error", "overflow_error"),
                                r"(?i)shape|overflow|too large|too big|allocation"),
    "typestr_unknown": ("input", "d['typestr'] = '<x4'", ("value_error",), r"typestr"),
    "typestr_not_a_string": ("input", "d['typestr'] = 42", ("value_error",), r"typestr"),
    "typestr_without_byte_order": ("input", "d['typestr'] = 'f4'", ("value_error",), r"typestr"),
    "typestr_big_endian": ("input", "d['typestr'] = '>f4'", ("value_error",), r"big-endian"),
    "typestr_bad_size": ("input", "d['typestr'] = '<f3'", ("value_error",), r"typestr"),
    "typestr_embedded_nul": ("input", "d['typestr'] = '<f4\\x00junk'", ("value_error",), r"typestr"),
    "typestr_datetime": ("input", "d['typestr'] = '<M8[s]'", ("type_error",), r"unsupported dtype"),
    "version_99": ("input", "d['version'] = 99", ("value_error",), r"version 99"),
    "version_not_an_int": ("input", "d['version'] = '3'", ("value_error",), r"'version'"),
    "mask": ("input", "d['mask'] = valid()", ("value_error",), r"mask"),
    "shape_negative": ("input", "d['shape'] = (-1000,)", ("value_error",), r"'shape'"),
    "shape_a_list": ("input", "d['shape'] = [1000]", ("value_error",), r"'shape'"),
    "strides_not_a_multiple_of_the_itemsize": ("input", "d['strides'] = (3,)", ("value_error",),
                                               r"multiples? of the 4-byte"),
    "strides_of_the_wrong_length": ("input", "d['strides'] = (4, 4)", ("value_error",), r"'strides'"),
    "stream_zero": ("input", "d['stream'] = 0", ("value_error",), r"'stream'"),
    "stream_negative": ("input", "d['stream'] = -1", ("value_error",), r"'stream'"),
    "data_missing": ("input", "del d['data']", ("value_error",), r"'data'"),
    "data_not_a_pair": ("input", "d['data'] = BASE", ("value_error",), r"'data'"),
    "out_read_only": ("out", "d['data'] = (OUT, True)", ("value_error",), r"read-only"),
    "out_zero_strides": ("out", "d['strides'] = (0,)", ("value_error",), r"(?i)stride|overlap|read-only|broadcast"),
    "out_host_pointer": ("out", "d['data'] = (HOST.ctypes.data, False)", ("value_error",), r"not device memory"),
    "out_beyond_allocation": ("out", "d['data'] = (OUT + OUT_BYTES - 3992, False)", ("value_error",), "ALLOCATION"),
}
_ALLOCATION = r"(?i)beyond (its|the) allocation"  # the wording src/operand.c is getting for spans past the memory


@pytest.mark.parametrize("case", list(LIES))
def test_lying_cuda_array_interface_is_refused(case):
    """A __cuda_array_interface__ that lies about one field of an otherwise valid description (1000 float32 in a
    4000-byte allocation, first checked to work) is refused with an exception naming what is wrong, before any
    launch (an out= is left as it was), for sum, cumsum and max alike (cumsum into it for an out=); the process
    goes on working."""
    role, lie, kinds, pattern = LIES[case]
    span = pattern == "ALLOCATION"
    result = run_child(LIE_SETUP, f"ROLE = {role!r}", """
        baseline = check_valid(CAI(valid()))
        d = valid(OUT) if ROLE == "out" else valid()
    """, lie, """
        if ROLE == "out":
            got = {"cumsum": public(outcome(lambda: gpureduce.cumsum(CAI(valid()), out=CAI(d))))}
        else:
            got = {op: public(outcome(lambda op=op: getattr(gpureduce, op)(CAI(d)))) for op in ("sum", "cumsum", "max")}
        report(baseline=baseline, got=got, allocation_bytes=OUT_BYTES if ROLE == "out" else ALLOC_BYTES,
               out_untouched=out_untouched(), next=next_call())
    """)
    assert result["baseline"] == {"sum": True, "cumsum": True, "max": True}, (
        f"the valid description this case changes does not work: {result['baseline']}" + result["_output"])
    for op, got in result["got"].items():
        what = f"gpureduce.{op} of a __cuda_array_interface__ {role} with {case.replace('_', ' ')} ({lie})"
        assert_raised(got, kinds, _ALLOCATION if span else pattern, result["_output"], what=what)
        if span:
            assert names_size(got["message"], result["allocation_bytes"]) or names_size(got["message"], 4000), (
                f"{what}: the message does not name the allocation's size ({result['allocation_bytes']} bytes): "
                f"{got['message']!r}" + result["_output"])
    assert result["out_untouched"], f"the refused call wrote into out= ({case})" + result["_output"]
    assert_next_call_ok(result)


@pytest.mark.parametrize("op", ["cumsum", "sum"])
def test_zero_stride_cupy_out_is_refused(op):
    """A CuPy broadcast view (strides 0: one element for all) as out=: NumPy refuses to write into broadcast
    views ("output array is read-only"); gpureduce must refuse before writing, not race every result into one
    element."""
    pytest.importorskip("cupy")
    result = run_child(f"OP = {op!r}", """
        import cupy as cp
        x = cp.arange(2000, dtype=cp.float32).reshape(2, 1000)
        one = cp.full((1,), -7, dtype=cp.float32)
        out = cp.broadcast_to(one, (2, 1000) if OP == "cumsum" else (1000,))
        kwargs = {"axis": 1} if OP == "cumsum" else {"axis": 0}
        got = outcome(lambda: getattr(gpureduce, OP)(x, out=out, **kwargs))
        cp.cuda.Device().synchronize()
        report(got=public(got), untouched=float(one.get()[0]) == -7.0, next=next_call())
    """)
    assert_raised(result["got"], ("value_error",), r"(?i)stride|overlap|read-only|broadcast", result["_output"],
                  what=f"gpureduce.{op} into a zero-stride CuPy out=")
    assert result["untouched"], "the refused call wrote into out=" + result["_output"]
    assert_next_call_ok(result)


def test_raw_dlpack_capsule_used_twice():
    """gpureduce.sum(capsule) with a bare DLPack capsule (not an exporter): either refused (TypeError/ValueError)
    or read once; a second use of the same capsule is refused, never a crash or a double free."""
    pytest.importorskip("cupy")
    result = run_child("""
        import cupy as cp
        x = cp.arange(1000, dtype=cp.float32)
        cap = x.__dlpack__()
        first = outcome(lambda: gpureduce.sum(cap))
        second = outcome(lambda: gpureduce.sum(cap))
        is_valid = ctypes.pythonapi.PyCapsule_IsValid
        is_valid.restype, is_valid.argtypes = ctypes.c_int, [ctypes.py_object, ctypes.c_char_p]
        unused = bool(is_valid(cap, b"dltensor_versioned") or is_valid(cap, b"dltensor"))
        del cap
        import gc; gc.collect()
        report(first=public(first), second=public(second), unused=unused, x_intact=float(x.sum()) == 499500.0,
               next=next_call())
    """)
    first, second = result["first"], result["second"]
    if first["raised"] is None:
        assert first["value"]["values"] == [499500.0], f"a capsule read gave {first['value']}" + result["_output"]
        assert_raised(second, ("value_error", "type_error"), r"(?i)capsule|dlpack|consumed|used", result["_output"],
                      what="the second gpureduce.sum of one DLPack capsule")
    else:
        assert_raised(first, ("value_error", "type_error"), r"(?i)capsule|dlpack|unsupported", result["_output"],
                      what="gpureduce.sum of a bare DLPack capsule")
        assert_raised(second, ("value_error", "type_error"), r"(?i)capsule|dlpack|unsupported", result["_output"],
                      what="the second gpureduce.sum of a bare DLPack capsule")
        assert result["unused"], "gpureduce refused the capsule but consumed it" + result["_output"]
    assert result["x_intact"], "the array behind the capsule was damaged" + result["_output"]
    assert_next_call_ok(result)


def test_exporter_returning_a_used_capsule():
    """An exporter whose __dlpack__ hands out the same capsule every time: the first call reads it, the second
    gets a used capsule ("used_dltensor...") and must be refused with TypeError/ValueError."""
    pytest.importorskip("cupy")
    result = run_child("""
        import cupy as cp
        x = cp.arange(1000, dtype=cp.float32)

        class Reuser:
            def __init__(self):
                self.capsule = None

            def __dlpack_device__(self):
                return x.__dlpack_device__()

            def __dlpack__(self, **kwargs):
                if self.capsule is None:
                    self.capsule = x.__dlpack__(**kwargs)
                return self.capsule

        r = Reuser()
        first = outcome(lambda: gpureduce.sum(r))
        second = outcome(lambda: gpureduce.sum(r))
        del r
        import gc; gc.collect()
        report(first=public(first), second=public(second), x_intact=float(x.sum()) == 499500.0, next=next_call())
    """)
    assert result["first"]["raised"] is None and result["first"]["value"]["values"] == [499500.0], (
        f"the first read of the capsule: {result['first']}" + result["_output"])
    assert_raised(result["second"], ("value_error", "type_error"), r"(?i)unused|used|consumed", result["_output"],
                  what="gpureduce.sum of an exporter returning an already used capsule")
    assert result["x_intact"], "the array behind the capsule was damaged" + result["_output"]
    assert_next_call_ok(result)


# ---------------------------------------------------------------- 4. property tests

PROPERTY_CHILD = r'''
"""Property tests of gpureduce's intake against lying exporters, run as a script by tests/test_faults_gpu.py
(in a child process: a crash fails that test instead of killing pytest).  argv: cai|dlpack, examples.

Prints one RESULT {json} line: examples run, outcomes by kind, results compared, the failures (at most the
first: hypothesis does not shrink here, since an example that breaks the CUDA context makes every later one
fail)."""
import ctypes
import json
import math
import operator
import sys
import traceback
import warnings

import numpy as np
from hypothesis import HealthCheck, Phase, assume, given, settings, strategies as st

import gpureduce
from gpureduce import _core
from gpureduce.testing import to_numpy

ALLOWED = (TypeError, ValueError, OverflowError, gpureduce.CudaError)
OPS = ("sum", "cumsum", "max")
ALLOC = 4096  # bytes of the live allocation the descriptions point into
MAX_ELEMENTS = 2**22  # a valid description of more elements (zero strides) is skipped: legitimate but long work
GR_MAX_NDIM = 64
# (kind, itemsize) of the dtypes gpureduce reads (src/dtypes.c)
KINDS = {("b", 1), ("i", 1), ("i", 2), ("i", 4), ("i", 8), ("u", 1), ("u", 2), ("u", 4), ("u", 8), ("f", 2),
         ("f", 4), ("f", 8), ("c", 8), ("c", 16)}

STATS = {"examples": 0, "outcomes": {}, "compared": 0, "unverified": 0, "skipped_large": 0, "valid_refused": [],
         "failures": []}
BASE = HOST_PTR = 0
HOST = np.zeros(ALLOC, np.uint8)  # host memory a description may point into
cp = HEALTH = OWNER = None


class Failure(AssertionError):
    pass


def fail(message, **context):
    STATS["failures"].append({"message": message, **{k: repr(v)[:2000] for k, v in context.items()}})
    raise Failure(message)


def count(key):
    STATS["outcomes"][key] = STATS["outcomes"].get(key, 0) + 1


# ---------------------------------------------------------------- what the protocol allows


class Refused(Exception):
    pass


def as_int64(v):  # PyLong_AsLongLong: ints and __index__ objects, within int64
    i = operator.index(v)
    if not -(2**63) <= i < 2**63:
        raise OverflowError
    return i


def as_uint64(v):  # PyLong_AsUnsignedLongLong: int (and bool) only, within uint64
    if not isinstance(v, int):
        raise TypeError
    if not 0 <= v < 2**64:
        raise OverflowError
    return v


def parse_dtype(s):
    if not isinstance(s, str) or "\x00" in s or len(s) < 3 or s[0] not in "<|=":
        raise Refused
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dtype = np.dtype("=" + s[1:])
    if dtype.fields is not None or dtype.subdtype is not None or (dtype.kind, dtype.itemsize) not in KINDS:
        raise Refused
    return dtype


class Layout:
    """A description the protocol allows: dtype, shape, byte strides, pointer, element count (exact), and the
    bytes it spans, [ptr + lo, ptr + hi)."""

    def __init__(self, dtype, shape, strides, ptr):
        self.dtype, self.shape, self.strides, self.ptr = dtype, shape, strides, ptr
        self.n = math.prod(shape)
        extents = [(d - 1) * s for d, s in zip(shape, strides)] if self.n else []
        self.lo = sum(e for e in extents if e < 0)
        self.hi = sum(e for e in extents if e > 0) + dtype.itemsize if self.n else 0


def model(cai):
    """The Layout of a description the protocol allows, or None where gpureduce must refuse it."""
    try:
        return _model(cai)
    except (Refused, TypeError, ValueError, OverflowError):
        return None


def _model(cai):
    if not isinstance(cai, dict) or any(k not in cai for k in ("shape", "typestr", "data", "version")):
        raise Refused
    version = operator.index(cai["version"])
    if version not in (2, 3) or cai.get("mask") is not None:
        raise Refused
    dtype = parse_dtype(cai["typestr"])
    shape = cai["shape"]
    if not isinstance(shape, tuple) or len(shape) > GR_MAX_NDIM:
        raise Refused
    shape = tuple(as_int64(d) for d in shape)
    if any(d < 0 for d in shape) or math.prod(shape) >= 2**63:
        raise Refused
    data = cai["data"]
    if not isinstance(data, tuple) or len(data) != 2:
        raise Refused
    ptr = as_uint64(data[0])
    bool(data[1])
    if ptr == 0 and math.prod(shape) > 0:
        raise Refused
    strides = cai.get("strides")
    if strides is None:
        strides, step = [], dtype.itemsize
        for d in reversed(shape):
            strides.insert(0, step)
            step *= d
    else:
        if not isinstance(strides, tuple) or len(strides) != len(shape):
            raise Refused
        strides = [as_int64(s) for s in strides]
        if any(s % dtype.itemsize for s in strides):
            raise Refused
    if version == 3 and cai.get("stream") is not None:
        if as_uint64(cai["stream"]) == 0:
            raise Refused
    if ptr % dtype.itemsize:
        raise Refused
    layout = Layout(dtype, shape, tuple(strides), ptr)
    if layout.n and not (0 <= ptr + layout.lo and ptr + layout.hi <= 2**64):
        raise Refused  # spans beyond the address space: no allocation holds it
    return layout


def pointer_kind(ptr):
    if not isinstance(ptr, int):
        return "junk"
    if BASE <= ptr < BASE + ALLOC:
        return "live"
    if BASE - 8192 <= ptr < BASE + ALLOC + 8192:
        return "near"  # outside the live allocation, maybe inside another one
    if HOST_PTR <= ptr < HOST_PTR + ALLOC:
        return "host"
    return "other"


# ---------------------------------------------------------------- the reference


def fill(dtype, seed):
    """The live allocation filled with small non-negative values of `dtype` (sums stay exact in float32)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2 if dtype.kind == "b" else 4, ALLOC // dtype.itemsize).astype(dtype)
    cp.cuda.runtime.memcpy(BASE, values.ctypes.data, ALLOC, cp.cuda.runtime.memcpyHostToDevice)


def expected_of(op, host):
    """NumPy's answer for `host`: (dtype, exact value as float64/complex128/int array); None for max of nothing."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        if op == "max":
            return (host.dtype, np.max(host)) if host.size else None
        fn = np.sum if op == "sum" else np.cumsum
        dtype = fn(host[:0]).dtype if host.ndim else fn(host).dtype
        if host.dtype.kind in "fc":
            wide = np.complex128 if host.dtype.kind == "c" else np.float64
            return dtype, fn(host.astype(wide))
        return dtype, fn(host)


def compare(op, host, result, what):
    """result (gpureduce's) against NumPy on `host`: exact for integers, bool and max; for floats within 4 ulp
    of the exact value (the data's sums are exact in the float32 accumulator), non-finite values exactly."""
    want = expected_of(op, host)
    if want is None:
        fail(f"{what}: max of an empty array gave {result!r} (NumPy raises ValueError)")
    dtype, exact = want
    got = to_numpy(result)
    if op != "cumsum" and (isinstance(result, np.ndarray) or tuple(np.shape(got)) != ()):
        fail(f"{what}: a 0-d result must be a NumPy scalar or a 0-d device array, got {type(result).__name__}")
    if got.dtype != dtype or got.shape != np.shape(exact):
        fail(f"{what}: result {got.dtype} {got.shape}, NumPy gives {dtype} {np.shape(exact)}")
    with np.errstate(all="ignore"):
        if op == "max" or dtype.kind not in "fc":
            ok = (got == exact) | (np.isnan(got) & np.isnan(exact) if dtype.kind in "fc" else False)
        else:
            rounded = np.asarray(exact).astype(dtype)
            finite = np.isfinite(rounded)
            bound = 4 * np.finfo(dtype).eps * np.abs(exact) + 4 * np.finfo(dtype).smallest_subnormal
            ok = np.where(finite, np.abs(got.astype(np.asarray(exact).dtype) - exact) <= bound,
                          (got == rounded) | (np.isnan(got) & np.isnan(rounded)))
    if not np.all(ok):
        fail(f"{what}: gpureduce gives {got.ravel()[:6]!r}..., NumPy {np.ravel(exact)[:6]!r}...")
    STATS["compared"] += 1


def healthy(context):
    """The device still works (a sticky CUDA error, e.g. after an out-of-bounds read, fails every later call)."""
    try:
        ok = float(gpureduce.sum(HEALTH)) == 499500.0
        why = "" if ok else "a wrong sum"
    except Exception as e:
        ok, why = False, f"{type(e).__name__}: {e}"
    if not ok:
        fail(f"after this example gpureduce no longer works ({why}): the example broke the process or the CUDA "
             "context", **context)


def call(op, x):
    try:
        return None, getattr(gpureduce, op)(x)
    except BaseException as e:
        if isinstance(e, ALLOWED):
            count(type(e).__name__)
            return e, None
        fail(f"gpureduce.{op} raised {type(e).__name__}: {e}", traceback=traceback.format_exc())


# ---------------------------------------------------------------- __cuda_array_interface__


def _junk():
    return st.one_of(
        st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63 - 2, max_value=2**66),
        st.integers(min_value=-(2**66), max_value=-1), st.floats(), st.text(max_size=6), st.binary(max_size=6),
        st.lists(st.integers(-5, 5), max_size=3), st.tuples(), st.tuples(st.integers(-5, 5)),
        st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
        st.recursive(st.integers(-3, 3) | st.none() | st.text(max_size=2),
                     lambda inner: st.lists(inner, max_size=2) | st.tuples(inner, inner), max_leaves=4))


JUNK = _junk()  # values of every kind a field should not hold


def pick(draw, valid, invalid, one_in=8):
    """A draw of `valid`, but one time in `one_in` an invalid value: from `invalid` or junk of any kind."""
    if draw(st.integers(0, one_in - 1)):
        return draw(valid)
    return draw(st.one_of(invalid, JUNK) if invalid is not None else JUNK)


def often(common, rare, one_in=10):
    """`common`, and `rare` one time in `one_in`."""
    return st.integers(0, one_in - 1).flatmap(lambda k: rare if k == 0 else common)


VALID_TYPESTRS = ["<f4", "<f8", "<f2", "<i4", "<i8", "|i1", "<i2", "|u1", "<u2", "<u4", "<u8", "|b1", "<b1", "<c8",
                  "<c16", "=f4", "|f8"]
INVALID_TYPESTRS = [">f4", ">i8", "<f3", "f4", "", "<", "<i", "<M8[s]", "<m8", "<U1", "|S4", "|V4", "<O8", "<x4",
                    "<f4 ", "<i16", "<(2,)f4"]
SPECIAL_DIMS = [1000, 1024, 4096, 2**20, 2**31, 2**32 + 1, 2**62, 2**63 - 1, 2**63, 2**64]
OFFSETS = [0, 1, 2, 4, 8, 16, ALLOC - 16, ALLOC - 8, ALLOC - 4, ALLOC, ALLOC + 4, -4, -16, 2 * ALLOC]


@st.composite
def pointers(draw):
    which = draw(st.sampled_from(["live"] * 14 + ["near", "near", "host", "host", "zero", "random", "random",
                                                  "negative", "huge", "true"]))
    if which == "live":
        return BASE + draw(often(st.integers(0, ALLOC // 16 - 1).map(lambda k: 16 * k), st.sampled_from(OFFSETS), 4))
    if which == "near":
        return BASE + draw(st.sampled_from([-8192, -4096, -256, ALLOC + 256, ALLOC + 4096]))
    if which == "host":
        return HOST_PTR + 16 * draw(st.integers(0, ALLOC // 16 - 1))
    return {"zero": 0, "random": draw(st.integers(1, 2**64 - 1)), "negative": draw(st.integers(-(2**65), -1)),
            "huge": draw(st.integers(2**64, 2**80)), "true": True}[which]


@st.composite
def cai_dicts(draw):
    d = {}
    d["version"] = pick(draw, st.sampled_from([2, 3, 3]),
                        st.sampled_from([0, 1, 4, 99, -1, "3", 3.0, None, 2**70, True]))
    typestr = pick(draw, st.sampled_from(VALID_TYPESTRS), st.sampled_from(INVALID_TYPESTRS))
    d["typestr"] = typestr
    try:
        itemsize = parse_dtype(typestr).itemsize
    except Exception:
        itemsize = 4
    ndim = draw(often(st.integers(0, 3), st.sampled_from([4, 8, 64, 65])))
    dim = often(st.integers(0, 40) | st.integers(1, 3), st.sampled_from(SPECIAL_DIMS)) if ndim <= 3 else \
        st.sampled_from([1, 1, 1, 2, 0])
    shape = tuple(draw(dim) for _ in range(ndim))
    d["shape"] = pick(draw, st.just(shape), st.sampled_from([list(shape), shape + (-1,), (-(2**63),) + shape]))
    ptr = draw(pointers())
    d["data"] = pick(draw, st.sampled_from([(ptr, False)] * 4 + [(ptr, True)]),
                     st.sampled_from([[ptr, False], (ptr,), (ptr, False, 0), (ptr, None)]))
    layout = draw(st.sampled_from(["absent", "none", "strides", "strides"]))
    if layout == "none":
        d["strides"] = None
    elif layout == "strides":
        step = often(st.integers(-3, 3).map(lambda k: k * itemsize),
                     st.sampled_from([1000 * itemsize, 2**40, -(2**40), 2**61, 3, itemsize + 1]))
        d["strides"] = pick(draw, st.just(tuple(draw(step) for _ in range(ndim))),
                            st.just(tuple(draw(step) for _ in range(ndim + 1))))
    if d["version"] == 3 and type(d["version"]) is int:  # never an arbitrary handle: nothing can check one
        streams = st.sampled_from([None, None, 1, 2, 0, -1, 2**64, 2**70, "1", 1.5, (1,), True])
    else:  # version 2 (or a refused version): the stream is not read
        streams = st.sampled_from([None, 1, 2, 0]) | st.integers(3, 2**64 - 1)
    if draw(st.booleans()):
        d["stream"] = draw(streams)
    if draw(st.integers(0, 7)) == 0:
        d["mask"] = draw(st.none() | JUNK)
    if draw(st.integers(0, 4)) == 0:
        d["descr"] = draw(st.just([("", "<f4")]) | JUNK)
    for key in ("shape", "typestr", "data", "version"):
        if draw(st.integers(0, 79)) == 0:
            del d[key]
    if draw(st.integers(0, 49)) == 0:
        return draw(JUNK)  # not a dict at all
    return d


class CAI:
    def __init__(self, description):
        self.__cuda_array_interface__ = description


@settings(max_examples=int(sys.argv[2]) if len(sys.argv) > 2 else 300, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(cai=cai_dicts(), op=st.sampled_from(OPS), seed=st.integers(0, 2**32 - 1))
def test_cai(cai, op, seed):
    layout = model(cai)
    data = cai.get("data") if isinstance(cai, dict) else None
    kind = pointer_kind(data[0] if isinstance(data, (tuple, list)) and data else None)
    if layout is not None and kind in ("live", "near") and MAX_ELEMENTS < layout.n and layout.hi - layout.lo < 2**31:
        STATS["skipped_large"] += 1
        assume(False)  # valid, or a few bytes past the allocation, but 2^22+ elements: long work, not a lie
    STATS["examples"] += 1
    context = {"cai": cai, "op": op}
    if layout is not None:
        fill(layout.dtype, seed)
    error, result = call(op, CAI(cai))
    if error is None:
        count("result")
        what = f"gpureduce.{op} of __cuda_array_interface__ {cai!r}"[:600]
        if layout is None:
            fail(f"{what}: gpureduce returned {result!r}; the description is not one the protocol allows", **context)
        if layout.n == 0:  # nothing read: NumPy's answer for no elements (a 0 sum, an empty scan)
            compare(op, np.zeros(0, layout.dtype), result, what)
        elif kind == "live":
            if not (BASE <= layout.ptr + layout.lo and layout.ptr + layout.hi <= BASE + ALLOC):
                fail(f"{what}: read bytes [{layout.lo:+d}, {layout.hi:+d}) around the pointer, beyond the "
                     f"{ALLOC}-byte allocation at offset {layout.ptr - BASE}, without an error", **context)
            mem = cp.cuda.UnownedMemory(BASE, ALLOC, OWNER)
            view = cp.ndarray(layout.shape, layout.dtype, cp.cuda.MemoryPointer(mem, layout.ptr - BASE),
                              strides=layout.strides)
            compare(op, view.get(), result, what)
        elif kind == "near":
            STATS["unverified"] += 1  # another allocation's memory, maybe: nothing to compare with
        else:
            fail(f"{what}: read {layout.n} elements at a {kind} pointer (not device memory) without an error",
                 **context)
    elif layout is not None and kind == "live" and layout.n and BASE <= layout.ptr + layout.lo \
            and layout.ptr + layout.hi <= BASE + ALLOC and len(STATS["valid_refused"]) < 20:
        if not (op == "max" and layout.n == 0):
            STATS["valid_refused"].append(f"{op} {cai!r}: {type(error).__name__}: {error}"[:400])
    del result
    healthy(context)


# ---------------------------------------------------------------- DLPack

# what __dlpack__ returns: a real capsule of the CuPy array ("fresh"), the same capsule every time ("shared"), a
# NumPy capsule of the same values ("host"), or a lie
LYING_PRODUCE = ["none", "int", "str", "tuple", "name:foo", "name:used_dltensor", "name:used_dltensor_versioned",
                 "name:dltensor_versioned_x", "name:DLTENSOR", "raise:TypeError", "raise:BufferError",
                 "raise:RuntimeError"]
PRODUCE = often(st.sampled_from(["fresh"] * 4 + ["shared", "host"]), st.sampled_from(LYING_PRODUCE), 2)
# what __dlpack_device__ returns: mostly the truth for a CUDA array (2, 0) or a host one (1, 0), else a lie
OTHER_DEVICES = [(13, 0), (2, 1), (2, -1), (0, 0), (10, 0), (2**32 + 2, 0), (2, 2**32), "raise"]
DEVICES = often(st.sampled_from([(2, 0)] * 5 + [(1, 0)]),
                st.one_of(st.sampled_from(OTHER_DEVICES),
                          st.tuples(st.integers(-(2**70), 2**70), st.integers(-(2**40), 2**40)), JUNK), 3)
ARRAYS, HOST_ARRAYS = [], []
_NAMES = {}  # capsule names must outlive their capsules
_DUMMY = ctypes.create_string_buffer(64)


def fake_capsule(name):
    """A capsule named `name` around a dummy pointer (never a name a DLPack consumer would read)."""
    assert name not in ("dltensor", "dltensor_versioned")
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    _NAMES.setdefault(name, ctypes.create_string_buffer(name.encode()))
    return new(ctypes.addressof(_DUMMY), ctypes.addressof(_NAMES[name]), None)


class Exporter:
    def __init__(self, device, produce, array, host):
        self.device, self.produce, self.array, self.host = device, produce, array, host
        self.shared = array.__dlpack__() if produce == "shared" else None

    def __dlpack_device__(self):
        if self.device == "raise":
            raise RuntimeError("__dlpack_device__ failed")
        return self.device

    def __dlpack__(self, **kwargs):
        p = self.produce
        if p == "fresh":
            return self.array.__dlpack__(**kwargs)
        if p == "shared":
            return self.shared
        if p == "host":
            return self.host.__dlpack__(**kwargs)
        if p == "tuple":
            return (self.array.__dlpack__(**kwargs),)
        if p.startswith("name:"):
            return fake_capsule(p[5:])
        if p.startswith("raise:"):
            raise {"TypeError": TypeError, "BufferError": BufferError, "RuntimeError": RuntimeError}[p[6:]]("no")
        return {"none": None, "int": 12345, "str": "dltensor"}[p]


@settings(max_examples=int(sys.argv[2]) if len(sys.argv) > 2 else 300, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
@given(device=DEVICES, produce=PRODUCE, index=st.integers(0, 10**6), op=st.sampled_from(OPS))
def test_dlpack(device, produce, index, op):
    STATS["examples"] += 1
    array, host = ARRAYS[index % len(ARRAYS)], HOST_ARRAYS[index % len(HOST_ARRAYS)]
    x = Exporter(device, produce, array, host)
    context = {"device": device, "produce": produce, "array": (array.dtype, array.shape, array.strides), "op": op}
    what = f"gpureduce.{op} of an exporter: __dlpack_device__() -> {device!r}, __dlpack__() -> {produce}"[:600]
    for attempt in (1, 2) if produce == "shared" else (1,):
        error, result = call(op, x)
        if error is None:
            count("result")
            if produce not in ("fresh", "shared", "host") or attempt == 2:
                fail(f"{what} (call {attempt}): gpureduce returned {result!r} from a lie", **context)
            compare(op, host if produce == "host" else cp.asnumpy(array), result, what)
        del result
    healthy(context)


# ---------------------------------------------------------------- main


def main():
    global BASE, HOST_PTR, cp, HEALTH, OWNER
    import cupy

    cp = cupy
    OWNER = object()
    BASE = cp.cuda.runtime.malloc(ALLOC)
    HOST_PTR = HOST.ctypes.data
    HEALTH = _core.to_device(np.arange(1000, dtype=np.float32))
    rng = np.random.default_rng(0)
    hosts = [rng.integers(0, 4, 1000).astype(np.float32), rng.integers(0, 4, (30, 40)).astype(np.int32),
             rng.integers(0, 4, (40, 30)).astype(np.float64)[:, ::2].T, rng.integers(0, 4, 999).astype(np.int8)[::-1],
             rng.integers(0, 2, 17).astype(np.bool_), (rng.integers(0, 4, (8, 8)) + 1j).astype(np.complex64),
             rng.integers(0, 4, 100).astype(np.float16), rng.integers(0, 4, 5).astype(np.uint64),
             np.zeros(0, np.float32), np.float32(2.5) * np.ones((), np.float32)]
    ARRAYS.extend(cp.asarray(h) for h in hosts)
    ARRAYS[2] = cp.asarray(np.ascontiguousarray(hosts[2].T)).T  # the same transposed layout on the device
    ARRAYS[3] = cp.asarray(hosts[3][::-1].copy())[::-1]  # negative strides on the device
    ARRAYS.append(cp.broadcast_to(cp.arange(3, dtype=cp.float32), (50, 3)))  # zero strides
    hosts.append(np.broadcast_to(np.arange(3, dtype=np.float32), (50, 3)))
    HOST_ARRAYS.extend(np.array(h) for h in hosts)
    test = {"cai": test_cai, "dlpack": test_dlpack}[sys.argv[1]]
    try:
        test()
    except Failure:
        pass  # recorded in STATS
    except Exception as e:  # hypothesis itself (a health check, ...): reported as a failure
        STATS["failures"].append({"message": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]})
    print("RESULT " + json.dumps(STATS, default=repr), flush=True)


if __name__ == "__main__":
    main()
'''


@pytest.mark.parametrize("protocol", ["cai", "dlpack"])
def test_lying_exporters_property(protocol, tmp_path):
    """Random __cuda_array_interface__ dicts (keys present or not; ints huge and negative, tuples, lists, strings,
    None, floats, nested values; valid and invalid typestrs; pointers into a live 4096-byte allocation, near it,
    into host memory, null, random) or DLPack exporters (__dlpack__ returning a real CuPy or NumPy capsule, the
    same capsule twice, a capsule with another name, None, ...; __dlpack_device__ returning random tuples) give
    only TypeError, ValueError, OverflowError or gpureduce.CudaError, or NumPy's answer on the same memory; no
    example leaves the process unable to compute.  ~300 examples, in a child process."""
    pytest.importorskip("cupy")
    pytest.importorskip("hypothesis")
    script = tmp_path / "lying_exporters_child.py"
    script.write_text(PROPERTY_CHILD)
    try:
        done = subprocess.run([sys.executable, str(script), protocol, str(PROPERTY_EXAMPLES)], capture_output=True,
                              text=True, timeout=PROPERTY_TIMEOUT, env=_child_env(), cwd=tmp_path)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the property child hung (no exit within {PROPERTY_TIMEOUT} s)\n{_text(e.stderr)[-6000:]}")
    result = _result_of(done.returncode, done.stdout, done.stderr)
    summary = (f"{protocol}: {result['examples']} examples, outcomes {result['outcomes']}, {result['compared']} "
               f"results compared with NumPy, {result['unverified']} unverifiable, {result['skipped_large']} skipped "
               f"as long work; valid but refused: {result['valid_refused'][:5]}")
    print(summary)
    assert not result["failures"], f"{summary}\nfirst failure: {result['failures'][0]}" + result["_output"]
    assert result["examples"] >= PROPERTY_EXAMPLES * 0.8, summary + result["_output"]
    assert result["compared"] >= 10, f"too few valid examples to mean anything: {summary}" + result["_output"]
    for _ in range(result["examples"]):  # every example ran its checks, in the child, and passed them
        count_example()
