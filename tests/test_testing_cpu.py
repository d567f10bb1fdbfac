"""gpureduce.testing and gpureduce's pytest plugin, checked without a GPU.

assert_matches_numpy runs here against stand-ins for gpureduce's functions (NumPy itself, or NumPy made
wrong on purpose), so its verdicts are checked and not the kernels; the plugin runs in pytest sessions of
its own (pytester), with the device count faked.
"""
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import gpureduce
import gpureduce.pytest_plugin
from gpureduce import _bounds as bounds, testing
from gpureduce._registry import DTYPE_NAMES
from gpureduce.testing import assert_matches_numpy, error_bound, for_all_dtypes, for_all_variants, to_numpy

EPS32 = float(np.finfo(np.float32).eps)
EPS16 = float(np.finfo(np.float16).eps)
EPS64 = float(np.finfo(np.float64).eps)


def floor(dtype):
    return 4.0 * float(np.finfo(dtype).smallest_subnormal)


# ---------------------------------------------------------------- parametrize helpers


@pytest.mark.parametrize("kind", ["reduce", "scan"])
def test_for_all_variants_takes_the_registered_names(kind):
    mark = for_all_variants(kind)
    assert mark.name == "parametrize"
    assert mark.args == ("variant", [v.name for v in gpureduce.variants(kind=kind)])
    assert "auto" in mark.args[1]


def test_for_all_variants_filters_by_operation():
    assert for_all_variants("scan", op="cumsum").args[1] == [v.name for v in gpureduce.variants(kind="scan", op="sum")]
    assert for_all_variants("reduce", op="max").args[1] == [v.name for v in gpureduce.variants(kind="reduce", op="max")]
    axes = [v.name for v in gpureduce.variants(kind="reduce") if "axes" in v.properties]
    assert for_all_variants("reduce", op="mean").args[1] == axes + ["exact"]  # (exact's mean of whole arrays)
    assert for_all_variants("reduce", name="algorithm").args[0] == "algorithm"


@pytest.mark.parametrize("kind, op, match", [
    ("reduce", "cumsum", "is a scan"),
    ("scan", "median", "unknown operation"),
    ("sideways", None, "kind"),
])
def test_for_all_variants_refuses_what_does_not_exist(kind, op, match):
    with pytest.raises(ValueError, match=match):
        for_all_variants(kind, op=op)


def test_for_all_dtypes_takes_the_registry_dtypes():
    mark = for_all_dtypes()
    name, dtypes = mark.args
    assert name == "dtype" and len(dtypes) == 15
    assert [dt.name for dt in dtypes] == list(DTYPE_NAMES)
    assert all(isinstance(dt, np.dtype) for dt in dtypes)
    assert mark.kwargs["ids"] == list(DTYPE_NAMES)
    assert [dt.name for dt in for_all_dtypes("f").args[1]] == ["float16", "bfloat16", "float32", "float64"]
    assert [dt.name for dt in for_all_dtypes("bc", name="t").args[1]] == ["bool", "complex64", "complex128"]
    with pytest.raises(ValueError, match="unknown dtype kinds 'x'"):
        for_all_dtypes("fx")


def test_imports_and_bounds_without_pytest():
    """Users' code may import gpureduce.testing outside pytest: only the parametrize helpers need it."""
    code = """if True:
        import sys
        sys.modules["pytest"] = None  # import pytest now raises ImportError
        import numpy as np
        import gpureduce.testing as t
        print(float(t.error_bound("sum", np.ones(4), np.float64)) > 0)
        try:
            t.for_all_dtypes()
        except ImportError:
            print("for_all_dtypes needs pytest")
    """
    env = {**os.environ, "PYTHONPATH": os.path.dirname(os.path.dirname(gpureduce.__file__))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["True", "for_all_dtypes needs pytest"]


def test_helpers_stack_on_plain_test_functions(pytester):
    pytester.makepyfile("""
        from gpureduce.testing import for_all_dtypes, for_all_variants

        @for_all_variants("scan", op="cummax")
        @for_all_dtypes("u")
        def test_it(variant, dtype):
            assert dtype.kind == "u" and isinstance(variant, str)
    """)
    result = pytester.runpytest("--collect-only", "-q")
    variants = [v.name for v in gpureduce.variants(kind="scan", op="max")]
    ids = [f"test_it[{dtype}-{variant}]" for dtype in ("uint8", "uint16", "uint32", "uint64") for variant in variants]
    assert [line.split("::")[1] for line in result.stdout.lines if "::" in line] == ids
    pytester.runpytest().assert_outcomes(passed=len(ids))


# ---------------------------------------------------------------- error_bound


def test_sum_bound_formula():
    x = np.ones(1024, np.float32)
    want = 8 * EPS32 * 10 * 1024 + EPS32 * 1024 + floor(np.float32)
    assert error_bound("sum", x, np.float32) == pytest.approx(want, rel=1e-12)
    signed = np.array([1.0, -1.0, 0.5, -0.25], np.float64)  # |ref| 0.25, sum|x| 2.75, n 4
    want = 8 * EPS64 * 2 * 2.75 + EPS64 * 0.25 + floor(np.float64)
    assert error_bound("sum", signed, np.float64) == pytest.approx(want, rel=1e-12)
    assert testing.SLACK == 8


def depth(kind, n, flat=True, variant="auto"):
    """The documented depth: SLACK * log2(n), or CHAIN_SLACK * sqrt(the variant's rounding chain) if longer."""
    v = next(v for v in gpureduce.variants(kind=kind) if v.name == variant)
    return max(8 * math.log2(max(n, 2)), 4 * math.sqrt(v.rounding_chain(n, flat=flat)))


def test_sum_bound_along_axes_with_initial_where_and_keepdims():
    x = np.arange(12.0).reshape(3, 4)  # float64 values, held in float32 below
    got = error_bound("sum", x.astype(np.float32), np.float32, axis=1, keepdims=True)
    want = (EPS32 * depth("reduce", 4, flat=False) * np.abs(x).sum(axis=1, keepdims=True)
            + EPS32 * x.sum(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want + floor(np.float32), rtol=1e-12)
    mask = np.array([True, False, True, False])
    got = error_bound("sum", x.astype(np.float32), np.float32, axis=1, where=mask, initial=-3.0)
    ref = x.sum(axis=1, where=mask) - 3.0
    want = EPS32 * depth("reduce", 5, flat=False) * (np.abs(x).sum(axis=1, where=mask) + 3.0) + EPS32 * np.abs(ref)
    np.testing.assert_allclose(got, want + floor(np.float32), rtol=1e-12)


def test_float16_accumulates_in_float32_unless_the_input_is_rounded_to_float16():
    x = np.full(256, 0.5, np.float16)
    want = 8 * EPS32 * 8 * 128 + EPS16 * 128 + floor(np.float16)
    assert error_bound("sum", x, np.float16) == pytest.approx(want, rel=1e-12)
    # float32 input summed with dtype=float16: every element is rounded to float16 first
    want = 8 * EPS16 * 8 * 128 + EPS16 * 128 + floor(np.float16)
    assert error_bound("sum", x.astype(np.float32), np.float16) == pytest.approx(want, rel=1e-12)
    # int8 casts safely into float16: float32 accumulation again
    assert error_bound("sum", np.ones(256, np.int8), np.float16) > 0
    assert error_bound("sum", np.ones(256, np.int8), np.float16) < 8 * EPS16 * 8 * 256


def test_mean_bound_divides_by_the_count_taken():
    x = np.array([[1.0, -2.0, 3.0, 4.0]])
    mask = np.array([True, True, False, True])
    ref = np.mean(x, axis=1, where=mask)  # (1 - 2 + 4) / 3
    want = EPS64 * depth("reduce", 4, flat=False) * (7.0 / 3) + EPS64 * abs(ref) + floor(np.float64)
    np.testing.assert_allclose(error_bound("mean", x, np.float64, axis=1, where=mask), want, rtol=1e-12)


def test_prod_bound_is_relative():
    x = np.array([2.0, -3.0, 0.5, 4.0, 1.5, 1.0, -1.0, 2.0], np.float32)  # product 36, n 8
    want = 8 * EPS32 * math.sqrt(8) * 3 * 36 + EPS32 * 36 + floor(np.float32)
    assert error_bound("prod", x, np.float32) == pytest.approx(want, rel=1e-12)
    single = np.array([5.0])  # n 1 counts as 2, as for sums
    assert error_bound("prod", single, np.float64) == pytest.approx(
        8 * EPS64 * math.sqrt(2) * 5 + EPS64 * 5 + floor(np.float64), rel=1e-12)


def test_scan_bounds_are_per_element():
    x = np.array([1.0, -2.0, 3.0, -4.0], np.float32)
    cumulative = np.array([1.0, 3.0, 6.0, 10.0])
    ref = np.cumsum(x.astype(np.float64))
    np.testing.assert_allclose(error_bound("cumsum", x, np.float32),
                               EPS32 * depth("scan", 4) * cumulative + EPS32 * np.abs(ref) + floor(np.float32),
                               rtol=1e-12)
    shifted = np.array([0.0, 1.0, 3.0, 6.0])
    excl = np.array([0.0, 1.0, -1.0, 2.0])
    np.testing.assert_allclose(error_bound("cumsum", x, np.float32, exclusive=True),
                               EPS32 * depth("scan", 4) * shifted + EPS32 * np.abs(excl) + floor(np.float32),
                               rtol=1e-12)
    prods = np.cumprod(x.astype(np.float64))
    factors = np.sqrt(np.arange(1, 5))
    np.testing.assert_allclose(error_bound("cumprod", x, np.float32),
                               EPS32 * factors * depth("scan", 4) * np.abs(prods) + EPS32 * np.abs(prods)
                               + floor(np.float32),
                               rtol=1e-12)
    m = np.arange(6.0).reshape(2, 3)
    assert error_bound("cumsum", m, np.float64).shape == (6,)  # axis=None flattens
    assert error_bound("cumsum", m, np.float64, axis=0).shape == (2, 3)


def test_exact_results_have_no_bound():
    x = np.linspace(-1, 1, 10).reshape(2, 5)
    for op in ("min", "max", "argmin", "argmax"):
        assert not error_bound(op, x, np.float64, axis=1).any() and error_bound(op, x, np.float64, axis=1).shape == (2,)
    assert error_bound("cummax", x, np.float64, axis=1).shape == (2, 5)
    assert not error_bound("cummin", x, np.float64).any()
    assert not error_bound("sum", np.arange(10), np.int64).any()
    assert error_bound("sum", np.zeros((0, 3), np.float32), np.float32, axis=0).tolist() == [0, 0, 0]  # identity
    assert error_bound("prod", np.zeros(0), np.float64) == 0


@pytest.mark.parametrize("op, variant, match", [
    ("median", "auto", "unknown operation"),
    ("sum", "shufle", "unknown reduce variant 'shufle'"),
    ("cumsum", "shuffle", "unknown scan variant"),
    ("var", "auto", "no bound for var"),  # inexact, bounded by assert_matches_numpy itself: never a silent 0
    ("vector_norm", "auto", "no bound for vector_norm"),
])
def test_error_bound_refuses_unknown_names(op, variant, match):
    with pytest.raises(ValueError, match=match):
        error_bound(op, np.ones(3), np.float64, variant=variant)


def test_error_bound_is_the_same_for_every_variant():
    """The same for every variant whose chain is short at this size; 0 for an exact one (held to its bits), and for
    it only where its kernels run the call (a float array, whole or along axes, in a dtype that holds its elements
    exactly; not a narrower dtype=, into which NumPy rounds each element first)."""
    x = np.random.default_rng(1).uniform(-1, 1, 1000).astype(np.float32)
    variants = gpureduce.variants(kind="reduce")
    assert len({float(error_bound("sum", x, np.float32, variant=v.name)) for v in variants
                if "exact" not in v.properties}) == 1
    exact = [v.name for v in variants if "exact" in v.properties]
    assert exact and all(float(error_bound("sum", x, np.float32, variant=name)) == 0.0 for name in exact)
    assert all(float(error_bound("sum", x, np.float64, variant=name)) == 0.0 for name in exact)  # dtype=float64
    assert all(error_bound("sum", x.reshape(10, 100), np.float32, variant=name, axis=1).tolist() == [0.0] * 10
               for name in exact)  # along an axis too, a bound per result
    assert all(float(error_bound("sum", x.astype(np.float64), np.float32, variant=name)) > 0
               for name in exact)  # dtype=float32 of float64 elements: each rounded first


# ---------------------------------------------------------------- assert_matches_numpy against stand-ins


def stand_in(compute):
    """A gpureduce-like function: takes `variant=`, computes with `compute`."""
    return lambda *args, variant="auto", **kwargs: compute(*args, **kwargs)


def in_float32(numpy_function):
    """`numpy_function` accumulating float16 in float32, as gpureduce does (NumPy may accumulate in float16)."""
    def compute(a, *args, dtype=None, **kwargs):
        a = np.asarray(a)
        if a.dtype == np.float16 and dtype is None:
            return numpy_function(a, *args, dtype=np.float32, **kwargs).astype(np.float16)[()]
        return numpy_function(a, *args, **({} if dtype is None else {"dtype": dtype}), **kwargs)
    return compute


def numpy_scan(name):
    """NumPy's scan `name` with gpureduce's arguments: out= written, exclusive=True shifted by hand."""
    def compute(a, axis=None, dtype=None, out=None, exclusive=False):
        numpy_function = bounds.NUMPY_FUNCTIONS[name]
        if name in ("cumsum", "cumprod"):
            numpy_function = in_float32(numpy_function)
        r = numpy_function(np.asarray(a), axis=axis, **({} if dtype is None else {"dtype": dtype}))
        if exclusive:
            r, ax = bounds.scan_view(r, axis)
            r = bounds.shift_exclusive(r, ax, bounds.scan_identity(name, r.dtype))
        if out is None:
            return r
        out[...] = r
        return out
    return compute


@pytest.fixture
def numpy_as_gpureduce(monkeypatch):
    """gpureduce's functions replaced by NumPy's."""
    for name in testing.REDUCTIONS:
        numpy_function = bounds.NUMPY_FUNCTIONS[name]  # NumPy's, or SciPy's (logsumexp)
        monkeypatch.setattr(gpureduce, name, stand_in(in_float32(numpy_function) if name in ("sum", "prod")
                                                      else numpy_function))
    for name in testing.SCANS:
        monkeypatch.setattr(gpureduce, name, stand_in(numpy_scan(name)))


@pytest.mark.parametrize("op, kwargs", [
    ("sum", {}), ("sum", {"axis": 0, "keepdims": True}), ("sum", {"axis": 1, "dtype": np.float64}),
    ("sum", {"axis": 1, "initial": 2.5, "where": np.array([True, False, True, True, False])}),
    ("prod", {"axis": 1}), ("mean", {"axis": (0, 1)}), ("min", {"axis": 0}), ("max", {}),
    ("argmin", {"axis": 1}), ("argmax", {}),
    ("cumsum", {}), ("cumsum", {"axis": 1, "exclusive": True}), ("cumprod", {"axis": 0}),
    ("cummax", {"axis": 1}), ("cummax", {"exclusive": True}),
])
@pytest.mark.parametrize("dtype", ["float32", "int16", "complex64", "float16"])
def test_numpy_matches_itself(numpy_as_gpureduce, op, kwargs, dtype):
    x = np.random.default_rng(2).uniform(0.5, 2, (4, 5)).astype(dtype)
    if np.dtype(dtype).kind == "c" and op == "cummax" and kwargs.get("exclusive"):
        with pytest.raises(ValueError, match="no identity"):  # complex numbers have no smallest one
            assert_matches_numpy(op, x, **kwargs)
        return
    assert_matches_numpy(op, x, **kwargs)


def test_numpy_raising_means_gpureduce_must_raise_the_same_type(numpy_as_gpureduce, monkeypatch):
    assert assert_matches_numpy("max", np.zeros(0)) is None  # both: ValueError
    assert assert_matches_numpy("sum", np.ones(3), axis=2) is None  # both: numpy.exceptions.AxisError
    monkeypatch.setattr(gpureduce, "max", stand_in(lambda a, *args, **kw: np.float64(0)))
    with pytest.raises(AssertionError, match=r"NumPy raises ValueError \(zero-size.*gpureduce raises nothing"):
        assert_matches_numpy("max", np.zeros(0))

    def wrong_error(a, *args, **kw):
        raise TypeError("not the right kind")

    monkeypatch.setattr(gpureduce, "max", stand_in(wrong_error))
    with pytest.raises(AssertionError, match="NumPy raises ValueError .* gpureduce raises TypeError"):
        assert_matches_numpy("max", np.zeros(0))
    with pytest.raises(AssertionError, match="gpureduce raises TypeError .*NumPy returns a float64 result") as info:
        assert_matches_numpy("max", np.ones(3))
    assert isinstance(info.value.__cause__, TypeError)


def test_wrong_values_fail_naming_the_worst_element(numpy_as_gpureduce, monkeypatch):
    monkeypatch.setattr(gpureduce, "sum", stand_in(lambda a, *args, **kw: np.sum(a, *args, **kw) + 1))
    with pytest.raises(AssertionError) as info:
        assert_matches_numpy("sum", np.arange(12, dtype=np.int32).reshape(3, 4), axis=0, variant="shuffle")
    message = str(info.value)
    for part in ("gpureduce.sum(x, axis=0, variant='shuffle')", "dtype int32 and shape (3, 4)",
                 "4 of 4 result elements (int64, shape (4,)) off", "compared exactly"):
        assert part in message, message

    x = np.random.default_rng(3).uniform(-1, 1, (50, 40)).astype(np.float32)
    bound = error_bound("sum", x, np.float32, axis=0)

    def off_by(delta):
        def compute(a, axis=None, **kw):
            r = np.sum(a, axis=axis, **kw)
            r[7] += np.float32(delta[7])
            return r
        return compute

    monkeypatch.setattr(gpureduce, "sum", stand_in(off_by(0.5 * bound)))
    assert_matches_numpy("sum", x, axis=0)  # inside the bound
    monkeypatch.setattr(gpureduce, "sum", stand_in(off_by(np.maximum(4 * bound, 1e-3))))
    with pytest.raises(AssertionError, match=r"1 of 40 .* worst at index \(7,\): got .* float64 reference .* > bound"):
        assert_matches_numpy("sum", x, axis=0)
    assert_matches_numpy("sum", x, axis=0, rtol=1.0)  # a tolerance of the caller's choice replaces the bound
    with pytest.raises(AssertionError, match="rtol=1e-09"):
        assert_matches_numpy("sum", x, axis=0, rtol=1e-9)


def test_nan_positions_dtype_shape_and_kind_of_result(numpy_as_gpureduce, monkeypatch):
    x = np.array([1.0, np.nan, 3.0])
    assert np.isnan(assert_matches_numpy("sum", x))
    monkeypatch.setattr(gpureduce, "cumsum", stand_in(lambda a, *args, **kw: np.nan_to_num(np.cumsum(a))))
    with pytest.raises(AssertionError, match="non-finite results must match exactly"):
        assert_matches_numpy("cumsum", x)
    monkeypatch.setattr(gpureduce, "sum", stand_in(lambda a, *args, **kw: np.sum(a, dtype=np.float64)))
    with pytest.raises(AssertionError, match="result dtype float64, NumPy gives float32"):
        assert_matches_numpy("sum", np.ones(3, np.float32))
    monkeypatch.setattr(gpureduce, "sum", stand_in(lambda a, axis=None, keepdims=False, **kw: np.sum(a, axis)))
    with pytest.raises(AssertionError, match=r"result shape \(3,\), NumPy gives \(1, 3\)"):
        assert_matches_numpy("sum", np.ones((2, 3)), axis=0, keepdims=True)
    monkeypatch.setattr(gpureduce, "sum", stand_in(lambda a, *args, **kw: np.asarray(np.sum(a))))
    with pytest.raises(AssertionError, match="0-d result of a host input must be a NumPy scalar"):
        assert_matches_numpy("sum", np.ones(3))


def test_out_is_written_and_returned(numpy_as_gpureduce, monkeypatch):
    out = np.full(5, -1, np.int64)
    assert assert_matches_numpy("cumsum", np.arange(5, dtype=np.int32), out=out) is out
    np.testing.assert_array_equal(out, [0, 1, 3, 6, 10])
    assert assert_matches_numpy("cumsum", np.arange(5), out=out, exclusive=True) is out
    np.testing.assert_array_equal(out, [0, 0, 1, 3, 6])
    monkeypatch.setattr(gpureduce, "cumsum", stand_in(lambda a, axis=None, dtype=None, out=None: np.cumsum(a)))
    with pytest.raises(AssertionError, match="not the out= array"):
        assert_matches_numpy("cumsum", np.arange(5), out=out)


def test_exclusive_scans_start_from_the_identity(numpy_as_gpureduce, monkeypatch):
    x = np.array([[3, -1, 7], [2, 9, -5]], np.int16)
    got = assert_matches_numpy("cummax", x, axis=1, exclusive=True)
    np.testing.assert_array_equal(got, [[-32768, 3, 3], [-32768, 2, 9]])
    # an inclusive answer where an exclusive one is due fails
    monkeypatch.setattr(gpureduce, "cumsum", stand_in(lambda a, axis=None, exclusive=False: np.cumsum(a, axis)))
    with pytest.raises(AssertionError, match="off"):
        assert_matches_numpy("cumsum", x, axis=1, exclusive=True)
    with pytest.raises(ValueError, match="no identity"):
        assert_matches_numpy("cummax", x.astype(np.complex64), exclusive=True)


class FakeDevice:
    """A device array as far as the helpers can tell: CAI-less, with a `get()` that brings it home."""

    def __init__(self, host):
        self.host = host
        self.shape, self.dtype = host.shape, host.dtype

    def __dlpack__(self, **kwargs):
        raise AssertionError("to_numpy must use get()")

    def get(self):
        return self.host.copy()


def test_device_inputs_are_brought_home_for_numpy(numpy_as_gpureduce, monkeypatch):
    host = np.arange(10.0).reshape(2, 5)
    seen = []

    def cumsum_on_device(a, axis=None, dtype=None, out=None, exclusive=False):
        seen.append(type(a))
        return FakeDevice(np.cumsum(a.get(), axis))

    monkeypatch.setattr(gpureduce, "cumsum", stand_in(cumsum_on_device))
    assert isinstance(assert_matches_numpy("cumsum", FakeDevice(host), axis=1), FakeDevice)
    assert seen == [FakeDevice]  # gpureduce got the device array itself


def test_to_numpy_knows_the_device_libraries():
    host = np.arange(6, dtype=np.int32).reshape(2, 3)

    class Numba:
        __cuda_array_interface__ = {}

        def copy_to_host(self):
            return host

    class Torch:
        __cuda_array_interface__ = {}

        def detach(self):
            return self

        def cpu(self):
            return self

        def numpy(self):
            return host

    for device in (FakeDevice(host), Numba(), Torch()):
        np.testing.assert_array_equal(to_numpy(device), host, strict=True)
    assert to_numpy(np.float32(2)).shape == ()
    np.testing.assert_array_equal(to_numpy([1, 2]), [1, 2])


# ---------------------------------------------------------------- the pytest plugin
#
# Each test runs a pytest session of its own (in this process, so that the faked device count applies).  Its
# conftest registers the plugin as tests/conftest.py does, which also works where an installed gpureduce's
# pytest11 entry point has registered it already.

GPU_TESTS = """
    import pytest

    @pytest.mark.gpu
    def test_on_the_gpu():
        pass

    def test_anywhere():
        pass
"""
REGISTER_CONFTEST = """
    import gpureduce.pytest_plugin

    def pytest_configure(config):
        gpureduce.pytest_plugin.register(config)

    def pytest_report_header(config):
        names = [name for name, plugin in config.pluginmanager.list_name_plugin()
                 if plugin is gpureduce.pytest_plugin]
        return f"gpureduce plugin registered as {names}"
"""


@pytest.fixture
def devices(monkeypatch):
    """Set the device count gpureduce reports (an int), or an exception it raises."""
    monkeypatch.delenv(gpureduce.pytest_plugin.REQUIRE_GPU_ENV, raising=False)

    def set_count(count):
        def device_count():
            if isinstance(count, Exception):
                raise count
            return count
        monkeypatch.setattr(gpureduce, "device_count", device_count)

    return set_count


@pytest.fixture
def project(pytester):
    """A pytest project with one gpu test and one plain test, its conftest registering the plugin."""
    pytester.makeconftest(REGISTER_CONFTEST)
    pytester.makepyfile(GPU_TESTS)
    return pytester


def test_gpu_tests_are_skipped_without_a_device(project, devices):
    devices(0)
    result = project.runpytest("-rs", "--strict-markers")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * no CUDA device on this machine"])


def test_gpu_tests_run_with_a_device(project, devices):
    devices(1)
    project.runpytest("--strict-markers").assert_outcomes(passed=2)


def test_a_failing_device_query_is_the_skip_reason(project, devices):
    devices(ImportError("libcuda.so.1: cannot open shared object file"))
    result = project.runpytest("-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED * gpureduce could not count CUDA devices: ImportError: libcuda.so.1*"])


@pytest.mark.parametrize("count", [0, RuntimeError("driver too old")], ids=["no-device", "query-fails"])
def test_require_gpu_makes_a_missing_device_an_error(project, devices, monkeypatch, count):
    devices(count)
    monkeypatch.setenv("GPUREDUCE_REQUIRE_GPU", "1")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    reason = "no CUDA device on this machine" if count == 0 else "*RuntimeError: driver too old"
    result.stderr.fnmatch_lines([f"*GPUREDUCE_REQUIRE_GPU=1 and 1 gpu tests were collected, but {reason}"])
    project.runpytest("-m", "not gpu").assert_outcomes(passed=1, deselected=1)  # no gpu test, no device needed


def test_require_gpu_with_a_device_runs(project, devices, monkeypatch):
    devices(2)
    monkeypatch.setenv("GPUREDUCE_REQUIRE_GPU", "1")
    project.runpytest().assert_outcomes(passed=2)


def test_the_device_is_counted_only_for_gpu_tests(project, devices):
    devices(RuntimeError("must not be asked"))
    project.runpytest("-m", "not gpu").assert_outcomes(passed=1, deselected=1)


def test_marker_is_registered_once(project):
    result = project.runpytest("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.gpu: needs a CUDA device; skipped where none is found"])
    assert result.stdout.str().count("@pytest.mark.gpu:") == 1


def test_loaded_by_module_name_then_the_conftest(project, devices, monkeypatch):
    """`-p gpureduce.pytest_plugin` first (autoload off, so no entry point interferes), then the conftest:
    no "Plugin already registered"."""
    devices(0)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    result = project.runpytest("-p", "gpureduce.pytest_plugin")
    result.stdout.fnmatch_lines(["gpureduce plugin registered as [[]'gpureduce.pytest_plugin'[]]"])
    result.assert_outcomes(passed=1, skipped=1)


def entry_point_name(pytester, monkeypatch):
    """The name of gpureduce's pytest11 entry point: the installed one, or a fake distribution's made here."""
    from importlib.metadata import entry_points

    for ep in entry_points(group="pytest11"):
        if ep.value == "gpureduce.pytest_plugin":
            return ep.name
    site = pytester.mkdir("site")
    dist_info = site / "gpureduce_fake-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text("Metadata-Version: 2.1\nName: gpureduce-fake\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text("[pytest11]\ngpureduce = gpureduce.pytest_plugin\n")
    monkeypatch.syspath_prepend(str(site))
    return "gpureduce"


def test_loaded_by_the_entry_point_then_the_conftest(project, devices, monkeypatch):
    """An installed gpureduce: the entry point registers the plugin, the conftest finds it registered."""
    devices(0)
    name = entry_point_name(project, monkeypatch)
    result = project.runpytest("-rs")
    result.stdout.fnmatch_lines([f"gpureduce plugin registered as [[]'{name}'[]]"])
    result.assert_outcomes(passed=1, skipped=1)
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # then `-p <entry point name>` loads it
    result = project.runpytest("-p", name)
    result.stdout.fnmatch_lines([f"gpureduce plugin registered as [[]'{name}'[]]"])
    result.assert_outcomes(passed=1, skipped=1)


def test_numpy_logsumexp_is_scipys_with_weights_and_sign():
    """gpureduce.testing's logsumexp without SciPy: SciPy 1.17's values (computed there) for weights of both
    signs, zero weights dropping NaN and inf, cancellation to -inf, inf - inf, and empty slices."""
    inf, nan = np.inf, np.nan
    a = np.array([[1.0, 2.0], [1.0, 1.0], [2.0, 1.0], [inf, 1.0], [inf, 1.0], [1.0, nan], [1.0, 2.0], [-inf, -inf],
                  [inf, inf], [1000.0, 999.0], [3.0, 4.0]])
    b = np.array([[1, -1], [1, -1], [1, -1], [-1, 1], [0, 1], [1, 0], [1, nan], [1, 1], [1, -1], [-2, 3], [0, 0]])
    res, sign = bounds._numpy_logsumexp(a, 1, b, False, True)
    np.testing.assert_allclose(res, [1.54132485, -inf, 1.54132485, inf, 1.0, 1.0, nan, -inf, nan, 999.89058871,
                                     -inf], rtol=1e-8)
    np.testing.assert_array_equal(sign, [-1, 0, 1, -1, 1, 1, nan, 0, nan, -1, 0])
    with np.errstate(all="ignore"):
        plain = bounds._numpy_logsumexp(a, 1, b, False, False)
    np.testing.assert_array_equal(np.isnan(plain), [1, 0, 0, 1, 0, 0, 1, 0, 1, 1, 0])
    empty, empty_sign = bounds._numpy_logsumexp(np.zeros((2, 0)), 1, np.ones((2, 0)), False, True)
    np.testing.assert_array_equal(empty, [-inf, -inf])
    np.testing.assert_array_equal(empty_sign, [-1.0, -1.0])
    assert bounds._numpy_logsumexp(np.float32([1, 2]), None, np.float64([1, 2])).dtype == np.float64
    assert bounds._numpy_logsumexp(np.float16([1, 2]), None, None).dtype == np.float16
