"""Error texts a person can act on (no GPU needed): a close variant name suggested, the unsupported dtype named
first, and the missing driver or device worded as such."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gpureduce
from gpureduce import _core
from gpureduce.benchmark import benchmark

HAVE_GPU = gpureduce.device_count() > 0
ROOT = Path(__file__).resolve().parent.parent
DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]


# ---------------------------------------------------------------- variant names

def _calls(kind):
    return (lambda name: gpureduce.sum(np.ones(4, np.float32), variant=name)) if kind == "reduce" else \
        (lambda name: gpureduce.cumsum(np.ones(4, np.float32), variant=name))


def _registered(kind):
    return [v.name for v in gpureduce.variants(kind=kind)]


@pytest.mark.parametrize("kind", ["reduce", "scan"])
def test_a_name_in_another_case_is_suggested(kind):
    names = _registered(kind)
    if not names:
        pytest.skip(f"no {kind} variants in this build")
    for name in names:
        with pytest.raises(ValueError) as e:
            _calls(kind)(name.upper())
        msg = str(e.value)
        assert f"did you mean {name!r}?" in msg, msg
        assert all(n in msg for n in names), f"not every valid name is listed: {msg}"


@pytest.mark.parametrize("typo, meant", [("shufle", "shuffle"), ("Two_Pass", "two_pass"), ("atomicwarp", "atomic_warp"),
                                         ("thread-coarsening", "thread_coarsening")])
def test_a_misspelt_name_is_suggested(typo, meant):
    if meant not in _registered("reduce"):
        pytest.skip(f"{meant} is not in this build")
    with pytest.raises(ValueError, match=rf"unknown reduce variant {typo!r} \(did you mean {meant!r}\?\); valid"):
        _calls("reduce")(typo)


def test_no_suggestion_when_nothing_is_close():
    with pytest.raises(ValueError) as e:
        _calls("reduce")("zzzzzzzz")
    assert "did you mean" not in str(e.value) and "valid variants: " in str(e.value)


def test_benchmark_arguments_get_suggestions_too():
    with pytest.raises(ValueError, match=r"unknown op 'cumsun' \(did you mean 'cumsum'\?\); benchmarkable"):
        benchmark("cumsun")
    with pytest.raises(ValueError, match=r"unknown reduce variant\(s\) 'Shuffle' \(did you mean 'shuffle'\?\); valid"):
        benchmark("sum", ["Shuffle"])


# ---------------------------------------------------------------- dtypes

UNSUPPORTED = {
    "object": (lambda: np.array([1, "a", None], dtype=object), "object", "Python objects"),
    "str": (lambda: np.array(["ab", "cde"]), "<U3", "str"),
    "bytes": (lambda: np.array([b"ab", b"c"]), "|S2", "bytes"),
    "datetime": (lambda: np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64[D]", "datetime"),
    "timedelta": (lambda: np.array([1, 2], dtype="timedelta64[s]"), "timedelta64[s]", "timedelta"),
    "structured": (lambda: np.zeros(3, dtype=[("a", "<i4"), ("b", "<f8")]), "[('a', '<i4'), ('b', '<f8')]",
                   "structured"),
    "void": (lambda: np.zeros(3, dtype="V4"), "|V4", "void"),
}


def _assert_dtype_first(msg, dtype, kind, where="the input", type_name="numpy.ndarray"):
    assert msg.startswith(f"unsupported dtype {dtype} ({kind}) in {where}, a {type_name}: gpureduce reduces "), msg
    missing = [d for d in DTYPE_NAMES if not re.search(rf"(?<![\w]){d}(?![\w])", msg)]
    assert not missing, f"the message does not name {missing}: {msg!r}"
    assert "expected a NumPy array" in msg


@pytest.mark.parametrize("func", ["sum", "max", "mean", "argmin", "cumsum", "cummax"])
@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_unsupported_dtype_is_named_first(case, func):
    make, dtype, kind = UNSUPPORTED[case]
    with pytest.raises(TypeError) as e:
        getattr(gpureduce, func)(make())
    _assert_dtype_first(str(e.value), dtype, kind)


def test_unsupported_dtype_of_a_list_names_the_list():
    with pytest.raises(TypeError) as e:
        gpureduce.sum(["a", "bc"])
    _assert_dtype_first(str(e.value), "<U2", "str", type_name="list")


def test_unsupported_dtype_of_where_names_where():
    with pytest.raises(TypeError) as e:
        gpureduce.sum(np.ones(3), where=np.array(["a", "b", "c"]))
    _assert_dtype_first(str(e.value), "<U1", "str", where="where=")


def test_a_numeric_dtype_without_a_kernel_is_named_first():
    if not hasattr(np, "float128") or np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("long double is float64 here")
    with pytest.raises(TypeError, match=r"^unsupported dtype float128 in the input, a numpy.ndarray: gpureduce "):
        gpureduce.sum(np.ones(3, np.longdouble))


@pytest.mark.parametrize("case", sorted(UNSUPPORTED))
def test_the_extension_words_it_the_same(case):
    """The C intake itself (what every call and the benchmark helpers read) says the same as the Python layer."""
    make, dtype, kind = UNSUPPORTED[case]
    for call in (_core.intake, _core.to_device):
        with pytest.raises(TypeError) as e:
            call(make())
        _assert_dtype_first(str(e.value), dtype, kind)


# ---------------------------------------------------------------- no driver, no device

NO_DEVICE = re.compile(
    r"^no CUDA device is available: (no NVIDIA driver was found \(cudaErrorInsufficientDriver\); gpureduce needs an "
    r"NVIDIA driver and GPU to run its kernels \(import works without one\)"
    r"|the NVIDIA driver supports CUDA \d+\.\d+, older than the CUDA \d+\.\d+ runtime gpureduce was built with "
    r"\(cudaErrorInsufficientDriver\); update the NVIDIA driver"
    r"|the NVIDIA driver \(CUDA \d+\.\d+\) sees no GPU \(cudaErrorNoDevice\); .+"
    r"|initialising CUDA failed \(cudaError\w+: .+\))$")

needs_no_gpu = pytest.mark.skipif(HAVE_GPU, reason="checks the error raised where there is no CUDA device")


@needs_no_gpu
@pytest.mark.parametrize("call", [
    lambda: gpureduce.sum(np.ones(3)),
    lambda: gpureduce.cumsum(np.ones(3)),
    gpureduce.device_info,
    lambda: benchmark("sum", sizes=[1024], progress=False),
    _core.device_properties,
    _core.memory_info,
    lambda: _core.to_device(np.ones(3)),
    lambda: _core.empty((3,), np.float32),
    lambda: _core.time_calls(lambda: None, 1),
], ids=["sum", "cumsum", "device_info", "benchmark", "device_properties", "memory_info", "to_device", "empty",
        "time_calls"])
def test_no_device_says_why(call):
    with pytest.raises(gpureduce.CudaError) as e:
        call()
    assert NO_DEVICE.match(str(e.value)), str(e.value)
    with pytest.raises(gpureduce.CudaError):  # the same again: nothing is left half set up
        call()


@needs_no_gpu
def test_the_main_job_says_no_device_and_why():
    done = subprocess.run([sys.executable, "-m", "gpureduce"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 3, done  # EXIT_NO_DEVICE, as the README documents
    first, why = done.stderr.splitlines()[:2]
    assert first == "gpureduce: no CUDA device is available on this machine"
    assert NO_DEVICE.match("no CUDA device is available: " + why.strip()), why
