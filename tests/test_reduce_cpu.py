"""Reduction API checks that need no GPU: registry, argument validation, clear errors, no-device error."""
import numpy as np
import pytest

import gpureduce
from conftest import HAVE_GPU

REDUCE = gpureduce.variants(kind="reduce")


def test_import_and_registry_shape():
    names = [v.name for v in REDUCE]
    assert len(names) == len(set(names)), "variant names repeat"
    assert {"auto", "cub"} <= set(names)
    for v in REDUCE:
        assert v.doc and v.seed, f"{v.name} lacks a doc or seed reference"
        # every whole-array operator; an exact variant has no correctly rounded product, and means and nan forms
        assert set(v.ops) == ({"sum", "mean", "nansum", "nanmean", "min", "max"} if "exact" in v.properties else
                              {"sum", "prod", "min", "max"})
        assert {"float32", "float64", "int32", "int64"} <= set(v.dtypes)


def test_auto_is_the_deterministic_default_and_cub_the_baseline():
    by_name = {v.name: v for v in REDUCE}
    assert "default" in by_name["auto"].properties and by_name["auto"].deterministic
    assert "baseline" in by_name["cub"].properties
    assert [v.name for v in gpureduce.variants() if "default" in v.properties and v.kind == "reduce"] == ["auto"]


def test_variants_filters():
    assert gpureduce.variants(op="sum", kind="reduce") == REDUCE
    assert gpureduce.variants(op="nonsense") == []


def test_variants_filter_by_every_public_function_name():
    """Issue 12 item 6: variants("cumsum") was empty; every public reduction and scan name filters the list."""
    scans = gpureduce.variants(kind="scan")
    for name, op in (("cumsum", "sum"), ("cumprod", "prod"), ("cummax", "max"), ("cummin", "min")):
        got = gpureduce.variants(name)
        assert got and got == [v for v in scans if op in v.ops], name
        assert gpureduce.variants(name, kind="reduce") == []
    axes = [v for v in REDUCE if "axes" in v.properties]
    assert axes
    for name in ("mean", "argmin", "argmax"):  # the axis variants, and exact's mean of whole arrays
        assert gpureduce.variants(name) == [v for v in REDUCE if v in axes or name in v.ops], name
        assert gpureduce.variants(name, kind="scan") == []
    assert [v.name for v in gpureduce.variants("mean")] == [v.name for v in axes] + ["exact"]
    with pytest.raises(ValueError, match="unknown kind"):
        gpureduce.variants(kind="sideways")


def test_seed_progression_is_registered():
    expected = {
        "global_baseline", "interleaved_divergent", "interleaved_bank_conflict", "sequential_addressing",
        "first_add_during_load", "unroll_last_warp", "complete_unroll", "shuffle", "thread_coarsening",
        "atomic_block", "atomic_warp", "two_pass", "cub", "auto",
    }
    assert expected <= {v.name for v in REDUCE}


def test_unknown_variant_lists_valid_ones():
    with pytest.raises(ValueError) as e:
        gpureduce.sum(np.ones(4, np.float32), variant="fastest")
    for v in REDUCE:
        assert v.name in str(e.value)


def test_variant_must_be_a_string():
    with pytest.raises(TypeError, match="variant must be a str"):
        gpureduce.sum(np.ones(4), variant=3)


def test_unknown_operator():
    with pytest.raises(ValueError, match="unknown operator"):
        gpureduce.reduce("mean_of_squares", np.ones(4))


@pytest.mark.parametrize("kwargs", [dict(axis=0), dict(keepdims=True), dict(dtype=np.float32),
                                    dict(initial=1.0), dict(where=np.array([[True, False]] * 2))])
def test_teaching_variants_refuse_numpy_arguments_naming_auto(kwargs):
    with pytest.raises(ValueError, match="auto"):
        gpureduce.sum(np.ones((2, 2)), **kwargs, variant="shuffle")


@pytest.mark.parametrize("func", [gpureduce.mean, gpureduce.argmin, gpureduce.argmax])
def test_teaching_variants_do_not_implement_mean_or_arg_reductions(func):
    with pytest.raises(ValueError, match="auto"):
        func(np.ones(4), variant="two_pass")


@pytest.mark.parametrize("func, ufunc", [(gpureduce.min, "minimum"), (gpureduce.max, "maximum")])
def test_empty_min_max_raise_numpys_error(func, ufunc):
    with pytest.raises(ValueError) as ours:
        func(np.zeros(0, np.float32))
    with pytest.raises(ValueError) as numpys:
        getattr(np, ufunc.replace("imum", ""))(np.zeros(0, np.float32))
    assert str(ours.value) == str(numpys.value)
    assert ufunc in str(ours.value)


@pytest.mark.parametrize("dtype", ["complex64", "float16", "int8", "uint32", "bool"])
def test_teaching_variant_dtype_error_names_the_supported_ones(dtype):
    with pytest.raises(ValueError) as e:
        gpureduce.sum(np.ones(8, dtype=dtype), variant="shuffle")
    msg = str(e.value)
    assert dtype in msg and "float32" in msg and "auto" in msg


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[s]", "U3", "V4"])
def test_dtypes_gpureduce_does_not_know(dtype):
    with pytest.raises(TypeError) as e:
        gpureduce.sum(np.zeros(3, dtype=dtype))
    if dtype != "timedelta64[s]":  # NumPy refuses too (its words name its ufunc loops; ours what is accepted)
        with pytest.raises(TypeError):  # (NumPy sums timedelta64; gpureduce has no kernel for it: documented)
            np.sum(np.zeros(3, dtype=dtype))
    message = str(e.value)
    assert message.startswith(f"unsupported dtype {np.dtype(dtype).str if dtype[0] in 'UV' else dtype} ("), message
    assert "float16" in message and "complex128" in message, message


@pytest.mark.parametrize("bad", [object(), None, "text", {"a": 1}, np.array(["x", "y"])])
def test_not_an_array(bad):
    with pytest.raises(TypeError, match="expected a NumPy array"):
        gpureduce.sum(bad)


class FakeDeviceArray:
    """An object exporting a hand-made __cuda_array_interface__."""

    def __init__(self, **cai):
        self.__cuda_array_interface__ = cai


GOOD_CAI = dict(shape=(4,), typestr="<f4", data=(4096, False), version=3)


@pytest.mark.parametrize("missing", ["shape", "typestr", "data", "version"])
def test_malformed_cai_missing_key(missing):
    cai = {k: v for k, v in GOOD_CAI.items() if k != missing}
    with pytest.raises(ValueError, match=f"'{missing}' is missing"):
        gpureduce.sum(FakeDeviceArray(**cai))


@pytest.mark.parametrize(
    "change, error, match",
    [
        (dict(version=7), ValueError, "version 7"),
        (dict(mask=(1, False)), ValueError, "masked"),
        (dict(stream=0), ValueError, "forbids"),
        (dict(typestr=">f4"), ValueError, "big-endian"),
        (dict(typestr="<q9"), ValueError, "not a valid type string"),
        (dict(typestr="<m8"), TypeError, "unsupported dtype"),
        (dict(shape=[4]), ValueError, "shape"),
        (dict(shape=(-1,)), ValueError, "non-negative"),
        (dict(data=4096), ValueError, "data"),
        (dict(data=(0, False)), ValueError, "null pointer"),
        (dict(strides=(6,)), ValueError, "multiples of the 4-byte element size"),
        (dict(data=(4097, False)), ValueError, "not aligned"),
    ],
)
def test_malformed_cai(change, error, match):
    with pytest.raises(error, match=match):
        gpureduce.sum(FakeDeviceArray(**{**GOOD_CAI, **change}))


def test_cai_that_is_not_a_dict():
    with pytest.raises(TypeError, match="must be a dict"):
        gpureduce.sum(FakeDeviceArray.__new__(type("X", (), {"__cuda_array_interface__": [1, 2]})))


@pytest.mark.skipif(HAVE_GPU, reason="checks the no-device error")
def test_no_device_error_is_clear():
    with pytest.raises(gpureduce.CudaError, match="no CUDA device is available"):
        gpureduce.sum(np.ones(16, np.float32))
    # a well-formed device array is refused the same way, and the module stays usable
    with pytest.raises(gpureduce.CudaError, match="no CUDA device is available"):
        gpureduce.max(FakeDeviceArray(**GOOD_CAI))
    assert gpureduce.device_count() == 0


def test_every_variant_states_its_rounding_chain():
    """The accuracy table (gpureduce/_accuracy.py) covers exactly the registered variants: a new variant cannot
    come without its rounding chain, and the chains grow as the kernels say."""
    from gpureduce import _accuracy

    registered = {(v.kind, v.name) for v in gpureduce.variants()}
    assert set(_accuracy.CHAINS) == registered
    for v in gpureduce.variants():
        assert v.rounding and all(v.rounding_chain(n) >= 1 for n in (1, 2, 1000, 2**24))
        assert v.rounding_chain(2**24, flat=False) >= v.rounding_chain(2**24)
    by = {(v.kind, v.name): v for v in gpureduce.variants()}
    tree, atomic = by["reduce", "shuffle"], by["reduce", "atomic_block"]
    assert tree.rounding_chain(2**24) <= 32 < atomic.rounding_chain(2**24) == 2**24 // 512 + 8
    assert by["scan", "sequential"].rounding_chain(1000) == 999
    assert by["reduce", "atomic_warp"].rounding_chain(2**24, sms=132) > by["reduce", "atomic_warp"].rounding_chain(
        2**24, sms=16)


@pytest.mark.parametrize("kw", [{"axis": 0}, {"axis": 1}, {}], ids=["axis0", "axis1", "all"])
def test_mean_of_a_where_that_takes_nothing_warns_as_numpy(kw):
    """NumPy warns "Mean of empty slice" when a where= mask leaves some result no element; so does gpureduce,
    before any device work (without a device the call then stops with CudaError)."""
    import warnings

    x = np.ones((2, 3))
    for where in (np.array([[True, False, False], [True, False, False]]), np.zeros((2, 3), bool), [True, True, True]):
        said = {}
        for name, mean in (("numpy", np.mean), ("gpureduce", gpureduce.mean)):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    mean(x, where=where, **kw)
                except gpureduce.CudaError:
                    assert gpureduce.device_count() == 0
            said[name] = any("Mean of empty slice" in str(w.message) for w in caught)
        assert said["gpureduce"] == said["numpy"], (where, kw, said)


@pytest.mark.parametrize("variant", ["cub", "auto"])
def test_a_whole_array_kernel_reads_the_input_as_it_is(variant):
    """CUB's axis kernels exist for input = result only, so an int32 sum along an axis reads an int64 copy; its
    whole-array kernel reads int32 itself (a copy read at twice the bytes made CUB's int32 sum take float64's
    time, the baseline every table compares with).  Scans alike: a flattened or 1-d cumsum reads the input."""
    from gpureduce._planning.plan import prepare_reduce, prepare_scan
    from gpureduce import _core
    x = np.arange(24, dtype=np.int32).reshape(4, 6)
    whole, _ = prepare_reduce("sum", x, variant=variant)
    assert whole.a.dtype == np.int32 and whole.launcher == _core.LAUNCH_FLAT
    for kwargs in ({"axis": 1}, {"initial": 5}, {"where": x > 3}):
        plan, _ = prepare_reduce("sum", x, variant=variant, **kwargs)
        assert plan.launcher == _core.LAUNCH_AXIS
        assert plan.a.dtype == (np.int64 if variant == "cub" else np.int32), kwargs
    for a in (x, x[0]):
        scan, _ = prepare_scan("sum", a, variant=variant)
        assert scan.a.dtype == np.int32 and scan.launcher == _core.LAUNCH_FLAT
    for a, kwargs in ((x, {"axis": 1}), (x[:, ::2], {}), (np.asfortranarray(x), {})):
        scan, _ = prepare_scan("sum", a, variant=variant, **kwargs)
        assert scan.a.dtype == (np.int64 if variant == "cub" else np.int32), kwargs


def test_exact_plans_floating_sums_and_means_and_passes_the_rest_on():
    """variant="exact" runs its own kernel for a whole floating array's sum and mean and their nan forms (one
    rounding; a mean's of the sum divided by the count), its axis kernels along axes, with where=, initial= and
    out= (cuda/axis/reduce_segments_exact.cu), a dtype= after a cast into it; auto's for integer inputs and for
    min and max; complex inputs and other operators are refused naming the variants that take them."""
    from gpureduce._planning.plan import prepare_reduce
    from gpureduce import _core
    by_name = {v.name: v.index for v in REDUCE}
    for dtype in (np.float16, np.float32, np.float64):
        x = np.linspace(-1, 1, 101).astype(dtype)
        for op in ("sum", "mean", "nansum", "nanmean"):
            plan, _ = prepare_reduce(op, x, variant="exact")
            assert plan.variant == by_name["exact"] and plan.launcher == _core.LAUNCH_FLAT, (op, dtype)
            assert plan.a.dtype == dtype
    for op, x in (("mean", np.arange(10, dtype=np.int32)), ("nansum", np.arange(10, dtype=np.int64)),
                  ("max", np.ones(5, np.float32))):
        assert prepare_reduce(op, x, variant="exact")[0].variant == by_name["auto"], op
    x = np.ones((2, 5), np.float32)
    for kwargs in ({"axis": 1}, {"axis": 0, "keepdims": True}, {"where": x > 0}):
        plan, _ = prepare_reduce("mean", x, variant="exact", **kwargs)
        assert plan.variant == by_name["exact"] and plan.launcher == _core.LAUNCH_AXIS, kwargs
        assert plan.a.dtype == np.float32
    plan, _ = prepare_reduce("mean", x, variant="exact", dtype=np.float64)  # the elements cast first, exactly here
    assert plan.variant == by_name["exact"] and plan.a.dtype == np.float64
    plan, _ = prepare_reduce("sum", x, axis=1, initial=2.0, variant="exact")
    assert plan.variant == by_name["exact"] and plan.launcher == _core.LAUNCH_AXIS
    with pytest.raises(ValueError, match="auto"):
        prepare_reduce("sum", np.ones((2, 5), np.complex64), axis=1, variant="exact")
    with pytest.raises(ValueError, match="auto"):
        prepare_reduce("prod", x, axis=1, variant="exact")
