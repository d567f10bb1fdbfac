"""Scan API checks that need no GPU: registry, argument validation (out= included, before any device
work), the DeviceArray type, and the no-device error."""
import numpy as np
import pytest

import gpureduce
from conftest import HAVE_GPU

SCAN = gpureduce.variants(kind="scan")
FUNCS = {"sum": gpureduce.cumsum, "prod": gpureduce.cumprod, "min": gpureduce.cummin, "max": gpureduce.cummax}



# Host memory: never device memory, whatever the device has allocated (a made-up address such as
# 0x7F0000000000 can fall inside a real device allocation under unified addressing).
_HOST_BUFFER = np.zeros(64)


class FakeDeviceArray:
    """Only a __cuda_array_interface__ dict: what out= validation reads before it touches the device."""

    def __init__(self, **fields):
        cai = dict(shape=(8,), typestr="<f8", data=(_HOST_BUFFER.ctypes.data, False), version=3, strides=None)
        cai.update(fields)
        self.__cuda_array_interface__ = cai


def raises_no_device_or_runs(call):
    """Without a GPU the call must get past argument checks and fail with CudaError; with one it runs."""
    if HAVE_GPU:
        return call()
    with pytest.raises(gpureduce.CudaError, match="no CUDA device"):
        call()
    return None


# ---------------------------------------------------------------- registry and exports

def test_registry_has_the_scan_variants():
    names = [v.name for v in SCAN]
    assert len(names) == 13, f"expected the 13 scan variants, got {names}"
    assert len(set(names)) == len(names), "scan variant names repeat"
    assert {"auto", "cub", "sequential", "exact"} <= set(names)
    for v in SCAN:
        assert v.doc and v.seed, f"{v.name} lacks a doc or seed reference"
        # exact: the floating cumsum and nancumsum its own, integer cumsums, cummin and cummax auto's; no cumprod
        assert set(v.ops) == ({"sum", "nansum", "min", "max"} if v.name == "exact" else {"sum", "prod", "min", "max"})
        assert {"float32", "float64", "int32", "int64"} <= set(v.dtypes)
    assert [v.name for v in SCAN if "default" in v.properties] == ["auto"]
    assert [v.name for v in SCAN if "baseline" in v.properties] == ["cub"]
    assert next(v for v in SCAN if v.name == "auto").deterministic, "the default scan must repeat bitwise"


def test_docstring_lists_every_registered_variant():
    for v in SCAN:
        assert f"``{v.name}``" in gpureduce.scan.__doc__


def test_public_names():
    for name in ("scan", "cumsum", "cumprod", "cummax", "cummin", "DeviceArray"):
        assert name in gpureduce.__all__ and hasattr(gpureduce, name)
    assert gpureduce.DeviceArray is gpureduce._core.DeviceArray
    assert gpureduce.DeviceArray.__module__ == "gpureduce"


def test_device_array_cannot_be_made_by_hand():
    with pytest.raises(TypeError):
        gpureduce.DeviceArray()


# ---------------------------------------------------------------- arguments checked in Python

def test_unknown_variant_lists_the_valid_ones():
    with pytest.raises(ValueError) as e:
        gpureduce.cumsum(np.ones(4), variant="fastest")
    for v in SCAN:
        assert v.name in str(e.value)


def test_a_reduction_variant_is_not_a_scan_variant():
    reduce_only = {v.name for v in gpureduce.variants(kind="reduce")} - {v.name for v in SCAN}
    with pytest.raises(ValueError, match="unknown scan variant"):
        gpureduce.cumsum(np.ones(4), variant=sorted(reduce_only)[0])


def test_variant_must_be_a_string():
    with pytest.raises(TypeError, match="variant must be a str"):
        gpureduce.cumsum(np.ones(4), variant=3)


def test_unknown_operator():
    with pytest.raises(ValueError, match="unknown operator 'mean'.*sum, prod, min, max"):
        gpureduce.scan("mean", np.ones(4))


@pytest.mark.parametrize("exclusive", [1, 0, "yes", None, 1.0])
def test_exclusive_must_be_a_bool(exclusive):
    with pytest.raises(TypeError, match="exclusive must be a bool"):
        gpureduce.cumsum(np.ones(4), exclusive=exclusive)


@pytest.mark.parametrize("shape, axis", [((2, 3), 0), ((2, 3), 1), ((2, 3), -1), ((2, 2, 2), 2)])
def test_axes_of_multidimensional_arrays(shape, axis):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    got = raises_no_device_or_runs(lambda: gpureduce.cumsum(a, axis=axis))
    if got is not None:
        np.testing.assert_array_equal(got, np.cumsum(a, axis=axis))
    with pytest.raises(ValueError, match="auto"):
        gpureduce.cumsum(a, axis=axis, variant="kogge_stone")


def test_a_tuple_axis_is_numpys_type_error():
    with pytest.raises(TypeError, match="cannot be interpreted as an integer"):
        gpureduce.cumsum(np.ones((2, 2)), axis=(0, 1))


@pytest.mark.parametrize("shape, axis", [((3,), 1), ((3,), -2), ((2, 3), 2), ((), 1)])
def test_axis_out_of_bounds_is_numpys_axis_error(shape, axis):
    with pytest.raises(np.exceptions.AxisError) as ours:
        gpureduce.cumsum(np.ones(shape), axis=axis)
    with pytest.raises(np.exceptions.AxisError) as numpys:
        np.cumsum(np.ones(shape), axis=axis)
    assert str(ours.value) == str(numpys.value)


@pytest.mark.parametrize("axis", [None, 0, -1])
def test_the_axis_of_a_1d_array_is_accepted(axis):
    got = raises_no_device_or_runs(lambda: gpureduce.cumsum([1, 2, 3], axis=axis))
    if got is not None:
        np.testing.assert_array_equal(got, np.cumsum([1, 2, 3]))


@pytest.mark.parametrize("dtype", ["int8", "uint32", "float16", "complex64", "bool"])
def test_teaching_variant_dtype_error_names_auto(dtype):
    with pytest.raises(ValueError) as e:
        gpureduce.cumsum(np.ones(8, dtype=dtype), variant="kogge_stone")
    assert "float32" in str(e.value) and "auto" in str(e.value)


# ---------------------------------------------------------------- out= checked before the device

@pytest.mark.parametrize("op, in_dtype, out_dtype", [
    ("sum", "float64", "float32"), ("sum", "int32", "int32"), ("prod", "int32", "float64"),
    ("max", "int32", "int64"), ("min", "float32", ">f4"),
])
def test_host_out_of_another_dtype_is_cast_like_numpy(op, in_dtype, out_dtype):
    a = np.arange(1, 9).astype(in_dtype)
    out = np.zeros(8, out_dtype)
    got = raises_no_device_or_runs(lambda: FUNCS[op](a, out=out))
    if got is not None:
        assert got is out
        ref = {"sum": np.cumsum, "prod": np.cumprod, "max": np.maximum.accumulate, "min": np.minimum.accumulate}[op]
        np.testing.assert_array_equal(out, ref(a).astype(out_dtype))


@pytest.mark.parametrize("shape", [(7,), (9,), (2, 4), (8, 1), ()])
def test_host_out_of_the_wrong_shape(shape):
    with pytest.raises(ValueError, match=r"out= has shape .* result .* has shape \(8,\)"):
        gpureduce.cumsum(np.ones((2, 4)), out=np.zeros(shape))


def test_read_only_host_out():
    out = np.zeros(8)
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        gpureduce.cumsum(np.ones(8), out=out)


@pytest.mark.parametrize("out", [[0.0] * 8, (0.0,) * 8, 3.0, "out"])
def test_out_that_is_not_an_array(out):
    with pytest.raises(TypeError, match="out= must be None, a NumPy array, or a device array"):
        gpureduce.cumsum(np.ones(8), out=out)


@pytest.mark.parametrize("fields, error, match", [
    (dict(shape=(7,)), ValueError, r"out= has shape \(7,\)"),
    (dict(shape=(2, 4)), ValueError, r"out= has shape \(2, 4\)"),
    (dict(data=(0x7F0000000000, True)), ValueError, "read-only"),
    (dict(data=(0x7F0000000004, False)), ValueError, "not aligned"),
    (dict(mask=object()), ValueError, "masked"),
    (dict(version=1), ValueError, "version 1"),
    (dict(typestr="nonsense"), ValueError, "not a valid type string"),
    (dict(data=None), ValueError, "malformed __cuda_array_interface__ of out="),
    (dict(stream=0), ValueError, "'stream' is 0"),
])
def test_device_out_rejected_before_any_device_work(fields, error, match):
    with pytest.raises(error, match=match):
        gpureduce.cumsum(np.ones(8), out=FakeDeviceArray(**fields))


def test_device_out_with_missing_keys():
    class Broken:
        __cuda_array_interface__ = dict(shape=(8,), version=3)

    with pytest.raises(ValueError, match="'shape', 'typestr', 'data' and 'version' are required"):
        gpureduce.cumsum(np.ones(8), out=Broken())


@pytest.mark.parametrize("fields", [{}, dict(typestr="<f4"), dict(strides=(16,))],
                         ids=["same-dtype", "cast-into-it", "strided"])
def test_a_valid_out_gets_to_the_device(fields):
    """NumPy writes a scan into any out= of the right shape: another dtype is cast into it, a strided one is
    written through its strides.  The fake pointer is not device memory: only a real device can tell."""
    error, match = (ValueError, "not device memory") if HAVE_GPU else (gpureduce.CudaError, "no CUDA device")
    with pytest.raises(error, match=match):
        gpureduce.cumsum(np.ones(8), out=FakeDeviceArray(**fields))
    raises_no_device_or_runs(lambda: gpureduce.cumsum(np.ones(8), out=np.zeros(8)))


# ---------------------------------------------------------------- the runner itself

def _plan(kind, variant, op, a=np.ones(3), **fields):
    core = gpureduce._core
    given = dict(kind=kind, launcher=core.LAUNCH_AXIS, variant=variant, op=op,
                 result_dtype=core.dtype_names.index("float64"),
                 a=core.intake(a) if a is not None else None, layout=(1, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 3), shape=(3,))
    return core.Plan(**{**given, **fields})


def test_the_plan_is_verified_when_it_is_built():
    """src/plan.c: a plan that names no variant of its kind, an operator the variant lacks, a launcher that does
    not fit, a value of the wrong size or an operand that is no Operand fails when built, before any device
    work; the runner takes nothing else."""
    core = gpureduce._core
    with pytest.raises(TypeError, match="must be a _core.Plan"):
        core.run((0, 0, np.ones(3)))
    reduce_index = gpureduce.variants(kind="reduce")[0].index
    with pytest.raises(ValueError, match="not a scan variant"):
        _plan(core.KIND_SCAN, reduce_index, 0)
    with pytest.raises(ValueError, match="not a scan variant"):
        _plan(core.KIND_SCAN, 10**6, 0)
    auto = next(v.index for v in gpureduce.variants(kind="scan") if v.name == "auto")
    with pytest.raises(TypeError, match="must be a _core.Operand"):
        _plan(core.KIND_SCAN, auto, 0, a=None).with_operands(np.ones(3))
    with pytest.raises(ValueError, match="launcher 'flat' does not fit"):  # float64 input, int64 result
        _plan(core.KIND_SCAN, auto, 0, launcher=core.LAUNCH_FLAT, result_dtype=core.dtype_names.index("int64"))
    with pytest.raises(ValueError, match="LAUNCH_COPY for a copy"):
        _plan(core.KIND_SCAN, auto, 0, launcher=core.LAUNCH_COPY)
    with pytest.raises(ValueError, match="one float64 value"):
        _plan(core.KIND_SCAN, auto, 0, initial=b"\0")
    with pytest.raises(ValueError, match="takes initial=, not a parameter"):
        _plan(core.KIND_SCAN, auto, 0, parameter=bytes(8))
    with pytest.raises(TypeError, match="layout is 12 ints"):
        _plan(core.KIND_SCAN, auto, 0, layout=(1, 2, 3))
    with pytest.raises(TypeError, match="keyword arguments only"):
        core.Plan(0)
    template = _plan(core.KIND_SCAN, auto, 0, a=None)
    with pytest.raises(TypeError, match="template"):
        core.run(template)
    assert template.with_operands(core.intake(np.ones(3))).a.shape == (3,)
    with pytest.raises(TypeError, match="unexpected keyword"):
        template.with_operands(core.intake(np.ones(3)), where=None)
    classic = [v for v in gpureduce.variants(kind="scan") if "axes" not in v.properties]
    if classic:
        with pytest.raises(ValueError, match="has no axis kernels"):
            _plan(core.KIND_SCAN, classic[0].index, 0)
        with pytest.raises(ValueError, match="does not implement operator 9"):
            _plan(core.KIND_SCAN, classic[0].index, 9, launcher=core.LAUNCH_FLAT)


def test_the_segment_layout_is_written_in_the_order_c_reads():
    """gpureduce/_planning/layout.py writes the 12 ints of a layout in the order src/plan.c reads them
    (_core.SEGMENT_FIELDS): every field a distinct value, read back by name."""
    from gpureduce._planning.layout import Segments
    seg = Segments(count=(1, 2), in_strides=(3, 4), out_strides=(6, 7), mask_strides=(9, 10), reduce_count=12,
                   reduce_in_stride=5, reduce_out_stride=8, reduce_mask_stride=11)
    named = dict(zip(gpureduce._core.SEGMENT_FIELDS, seg.as_tuple()))
    assert named == {"c0": 1, "c1": 2, "is0": 3, "is1": 4, "ir": 5, "os0": 6, "os1": 7, "or": 8, "ms0": 9,
                     "ms1": 10, "mr": 11, "R": 12}


# ---------------------------------------------------------------- no device

@pytest.mark.skipif(HAVE_GPU, reason="checks the error raised where there is no CUDA device")
@pytest.mark.parametrize("op", sorted(FUNCS))
@pytest.mark.parametrize("n", [0, 5])
def test_without_a_gpu_calls_raise_cuda_error(op, n):
    with pytest.raises(gpureduce.CudaError, match="no CUDA device"):
        FUNCS[op](np.ones(n, np.float32))
    with pytest.raises(gpureduce.CudaError, match="no CUDA device"):
        gpureduce.scan(op, np.arange(n), exclusive=True)
