"""Argument errors of the NumPy-parity API, checked before any device access: these run without a GPU.

Every call here is invalid.  Where NumPy raises for the same call, the exception type and message must be
NumPy's (compared with the NumPy installed, not with copied strings).  Inputs are NumPy arrays, or a
device-array stand-in exporting only a ``__cuda_array_interface__`` that points at host memory: nothing
may read it, since every error must come before the device is touched.  A valid call would raise
``gpureduce.CudaError`` on a machine without a GPU, so none is made.
"""
import inspect
import re

import numpy as np
import pytest

import gpureduce

DTYPE_NAMES = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
               "float16", "bfloat16", "float32", "float64", "complex64", "complex128"]
REDUCTIONS = ["sum", "prod", "min", "max", "mean"]
ARG_REDUCTIONS = ["argmin", "argmax"]
SCANS = ["cumsum", "cumprod", "cummax", "cummin"]
SCAN_OP = {"cumsum": "sum", "cumprod": "prod", "cummax": "max", "cummin": "min"}
ALL_FUNCS = REDUCTIONS + ARG_REDUCTIONS + SCANS
REDUCE_VARIANTS = gpureduce.variants(kind="reduce")
# The variants that do everything (axis, keepdims, where, initial, dtype=, out=, mean/argmin/argmax, all 14
# dtypes): a teaching variant's refusal must name each of them.  The spec says "at least auto and cub".
ABLE_VARIANTS = ("auto", "cub")
TEACHING = [v.name for v in REDUCE_VARIANTS if v.name not in ABLE_VARIANTS]

# Host memory: never device memory, whatever the device has allocated.
_HOST_BUFFER = np.zeros(4096)


class FakeDeviceArray:
    """Only a __cuda_array_interface__ with the shape and dtype of a host array (its pointer is never read)."""

    def __init__(self, a):
        a = np.asarray(a)
        self._keep = a if a.size and a.flags.c_contiguous and a.dtype.isnative else _HOST_BUFFER
        self.__cuda_array_interface__ = dict(shape=a.shape, typestr=a.dtype.str, data=(self._keep.ctypes.data, False),
                                             version=3, strides=None)


def on(source, a):
    return a if source == "host" else FakeDeviceArray(a)


def call(name, a, entry="function", **kw):
    """gpureduce.<name>(a, **kw), or the same through gpureduce.reduce / gpureduce.scan."""
    if entry == "generic":
        if name in SCAN_OP:
            return gpureduce.scan(SCAN_OP[name], a, **kw)
        return gpureduce.reduce(name, a, **kw)
    return getattr(gpureduce, name)(a, **kw)


def numpy_call(name, a, **kw):
    """NumPy's function for `name`; scans' axis errors are numpy.cumsum's (cummax/cummin flatten like it)."""
    if name in SCAN_OP:
        return {"cumsum": np.cumsum, "cumprod": np.cumprod}.get(name, np.cumsum)(a, **kw)
    return getattr(np, name)(a, **kw)


def numpy_error(name, a, **kw):
    try:
        numpy_call(name, a, **kw)
    except Exception as e:  # noqa: BLE001 - whatever NumPy raises is the reference
        return e
    return None


def assert_same_error(theirs, ours_call):
    """`ours_call()` raises exactly NumPy's exception type, with NumPy's message."""
    assert theirs is not None, "NumPy accepts this call: not an error case"
    with pytest.raises(type(theirs)) as ours:
        ours_call()
    assert type(ours.value) is type(theirs), f"{type(ours.value).__name__}, NumPy raises {type(theirs).__name__}"
    assert str(ours.value) == str(theirs)


def _cases(funcs, candidates, expect, at_least=1):
    """The (func, shape, axis) candidates for which NumPy raises `expect` (checked when the module loads); at
    least `at_least` of them, so a NumPy that stopped raising cannot shrink the test to nothing."""
    out = []
    for name in funcs:
        for shape, axis, extra in candidates:
            if name in SCAN_OP and len(shape) == 0:
                continue  # NumPy's scans of a 0-d array disagree with each other (cumsum vs maximum.accumulate)
            e = numpy_error(name, np.zeros(shape), axis=axis, **extra)
            if isinstance(e, expect):
                out.append(pytest.param(name, shape, axis, extra, id=f"{name}-{shape}-axis{axis}-{extra or ''}"))
    assert len(out) >= at_least, f"only {len(out)} of the {expect.__name__} cases are NumPy errors (>= {at_least})"
    return out


ENTRIES = ["function", "generic"]
SOURCES = ["host", "device"]


# ---------------------------------------------------------------- axis

AXIS_OUT_OF_BOUNDS = [
    ((3,), 1, {}), ((3,), -2, {}), ((2, 3), 2, {}), ((2, 3), -3, {}), ((2, 3, 4), 3, {}), ((2, 3, 4), -4, {}),
    ((), 0, {}), ((), -1, {}), ((), 1, {}), ((0,), 1, {}), ((2, 3), 2, {"keepdims": True}),
    ((2, 3), (0, 2), {}), ((2, 3), (-3,), {}), ((), (0,), {}), ((4, 0), (1, 2), {}),
]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name, shape, axis, extra", _cases(ALL_FUNCS, AXIS_OUT_OF_BOUNDS, np.exceptions.AxisError, 20))
def test_axis_out_of_bounds_is_numpys_axis_error(name, shape, axis, extra, entry, source):
    a = np.zeros(shape)
    assert_same_error(numpy_error(name, a, axis=axis, **extra),
                      lambda: call(name, on(source, a), entry, axis=axis, **extra))


DUPLICATES = [((2, 3), (0, 0), {}), ((2, 3), (0, -2), {}), ((2, 3, 4), (1, -1, 0, 2), {}),
              ((2, 3), (1, 1), {"keepdims": True})]


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name, shape, axis, extra", _cases(REDUCTIONS, DUPLICATES, ValueError, 5))
def test_duplicate_axes(name, shape, axis, extra, entry, source):
    a = np.zeros(shape)
    theirs = numpy_error(name, a, axis=axis, **extra)
    assert "duplicate value in 'axis'" in str(theirs)
    assert_same_error(theirs, lambda: call(name, on(source, a), entry, axis=axis, **extra))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("axis", [(0,), (0, 1), (), (1, 0)])
@pytest.mark.parametrize("name", ARG_REDUCTIONS + SCANS)
def test_tuple_axis_for_arg_reductions_and_scans(name, axis, entry, source):
    """argmin/argmax and the scans take one axis: a tuple is NumPy's TypeError (cumsum's, for every scan)."""
    a = np.zeros((2, 3))
    theirs = numpy_error(name, a, axis=axis)
    assert isinstance(theirs, TypeError)
    assert_same_error(theirs, lambda: call(name, on(source, a), entry, axis=axis))


# ---------------------------------------------------------------- empty inputs

EMPTY = [
    ((0,), None, {}), ((0,), 0, {}), ((0,), -1, {}), ((0, 3), None, {}), ((0, 3), 0, {}), ((3, 0), 1, {}),
    ((3, 0), -1, {}), ((3, 0), None, {}), ((2, 0, 3), (0, 1), {}), ((2, 0, 3), 1, {"keepdims": True}),
    ((0, 3), 0, {"keepdims": True}), ((0,), None, {"keepdims": True}), ((3, 0), 0, {}), ((0, 3), 1, {}),
    # an empty reduced extent raises even where the result is empty too (NumPy)
    ((0, 0), 0, {}), ((0, 0), 1, {}), ((0, 0), None, {}), ((0, 0), (0, 1), {}), ((2, 0, 0), 1, {}),
    ((2, 0, 0), (1, 2), {}), ((0, 5, 0), 2, {"keepdims": True}),
]


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool", "complex128", "float16", "uint64"])
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name, shape, axis, extra", _cases(["min", "max"], EMPTY, ValueError, 2))
def test_empty_min_max_raise_numpys_error(name, shape, axis, extra, entry, source, dtype):
    """No identity: reducing an empty extent is NumPy's ValueError (only where NumPy raises: a zero-size
    result over a non-empty extent, e.g. min of a (3, 0) array along axis 0, is not an error)."""
    a = np.zeros(shape, dtype)
    theirs = numpy_error(name, a, axis=axis, **extra)
    ufunc = "minimum" if name == "min" else "maximum"
    assert str(theirs) == f"zero-size array to reduction operation {ufunc} which has no identity"
    assert_same_error(theirs, lambda: call(name, on(source, a), entry, axis=axis, **extra))


@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex64"])
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name, shape, axis, extra", _cases(ARG_REDUCTIONS, EMPTY, ValueError, 2))
def test_empty_arg_reductions_raise_numpys_error(name, shape, axis, extra, entry, source, dtype):
    a = np.zeros(shape, dtype)
    theirs = numpy_error(name, a, axis=axis, **extra)
    assert str(theirs) == f"attempt to get {name} of an empty sequence"
    assert_same_error(theirs, lambda: call(name, on(source, a), entry, axis=axis, **extra))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("where", [np.array([True, False, True]), np.ones((2, 1), bool)])
@pytest.mark.parametrize("name", ["min", "max"])
def test_min_max_where_mask_needs_initial(name, where, source):
    """NumPy: min/max have no identity, so a where= mask needs initial= (even a mask of all True)."""
    a = np.ones((2, 3), np.float32)
    theirs = numpy_error(name, a, where=where)
    assert isinstance(theirs, ValueError) and "initial" in str(theirs)
    assert_same_error(theirs, lambda: call(name, on(source, a), where=where))


# ---------------------------------------------------------------- dtypes

UNSUPPORTED = {
    "object": lambda: np.array([1, "a", None], dtype=object),
    "str": lambda: np.array(["ab", "c"]),
    "bytes": lambda: np.array([b"ab", b"c"]),
    "datetime64": lambda: np.array(["2020-01-01", "2021-06-30"], dtype="datetime64[D]"),
    "timedelta64": lambda: np.array([1, 2], dtype="timedelta64[s]"),
}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("kind", sorted(UNSUPPORTED))
@pytest.mark.parametrize("name", ALL_FUNCS)
def test_unsupported_dtype_names_the_supported_ones(name, kind, entry):
    with pytest.raises(TypeError) as e:
        call(name, UNSUPPORTED[kind](), entry)
    msg = str(e.value)
    missing = [d for d in DTYPE_NAMES if not re.search(rf"(?<![\w]){d}(?![\w])|(?<![\w]){d}_", msg)]
    assert not missing, f"the message does not name {missing}: {msg!r}"


# ---------------------------------------------------------------- out=

OUT_WRONG_SHAPE = [
    ("sum", (3,), {}, (2,)),
    ("sum", (3,), {}, (1,)),
    ("prod", (3,), {}, (2,)),
    ("sum", (2, 3), {"axis": 0}, (1, 3)),
    ("sum", (2, 3), {"axis": 0}, (2,)),
    ("sum", (2, 3), {"axis": 0}, (4,)),
    ("sum", (2, 3), {"axis": 0}, ()),
    ("sum", (2, 3), {"axis": 1, "keepdims": True}, (2,)),
    ("sum", (2, 3), {"axis": (0, 1)}, (1,)),
    ("mean", (2, 3), {"axis": 1}, (3,)),
    ("mean", (3,), {}, (2,)),
    ("min", (2, 3), {"axis": 1}, (3,)),
    ("max", (2, 3), {"axis": 0}, (2,)),
    ("argmin", (2, 3), {"axis": 1}, (3,)),
    ("argmax", (2, 3), {"axis": 0}, (3, 1)),
    ("argmax", (3,), {}, (1,)),
    ("cumsum", (2, 3), {}, (5,)),
    ("cumsum", (2, 3), {}, (2, 3)),
    ("cumsum", (2, 3), {}, (6, 1)),
    ("cumsum", (2, 3), {"axis": 0}, (3, 2)),
    ("cumsum", (2, 3), {"axis": 0}, (6,)),
    ("cumprod", (2, 3), {"axis": 1}, (3, 2)),
    ("cummax", (2, 3), {"axis": 1}, (6,)),
    ("cummin", (2, 3), {}, (2, 3)),
]  # never a 0-d out for a scan: NumPy 2.4 crashes on np.cumsum(x, out=np.zeros(()))


def _numpy_out_call(name, a, out, kw):
    if name in ("cummax", "cummin"):
        ufunc = np.maximum if name == "cummax" else np.minimum
        axis = kw.get("axis")
        return ufunc.accumulate(a.ravel() if axis is None else a, axis=0 if axis is None else axis, out=out)
    return getattr(np, name)(a, out=out, **kw)


@pytest.mark.parametrize("out_kind", ["numpy", "device"])
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("name, shape, kw, out_shape", OUT_WRONG_SHAPE,
                         ids=[f"{n}-{s}-{k}-out{o}" for n, s, k, o in OUT_WRONG_SHAPE])
def test_out_of_the_wrong_shape(name, shape, kw, out_shape, source, out_kind):
    a = np.ones(shape, np.float32)
    result = np.asarray(_numpy_out_call(name, a, None, kw))
    out = np.zeros(out_shape, result.dtype)  # the right dtype: only the shape is wrong
    with pytest.raises(ValueError):
        _numpy_out_call(name, a, out, kw)  # NumPy refuses it too
    # NumPy's words depend on the loop ("wrong number of dimensions", "non-broadcastable output"); ours name
    # both shapes, the cause and what is expected
    shapes = (rf"out= has shape {re.escape(str(tuple(out_shape)))} but the result.* has shape "
              rf"{re.escape(str(result.shape))}")
    with pytest.raises(ValueError, match=shapes):
        call(name, on(source, a), out=out if out_kind == "numpy" else FakeDeviceArray(out), **kw)


# ---------------------------------------------------------------- variants

@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("name", ALL_FUNCS)
def test_unknown_variant_lists_the_valid_ones(name, entry):
    kind = "scan" if name in SCAN_OP else "reduce"
    op = SCAN_OP.get(name, name)
    with pytest.raises(ValueError) as e:
        call(name, np.ones(4, np.float32), entry, variant="fastest")
    # the registry's ops may list only the flat operators (mean/argmin/argmax run on auto's axis machinery)
    valid = [v.name for v in gpureduce.variants(kind=kind) if op in v.ops]
    for v in valid + ["auto"]:
        assert v in str(e.value), f"{v!r} is not listed: {e.value}"


X1 = np.ones(8, np.float32)
X2 = np.ones((4, 6), np.float32)
MASK = np.array([True, False] * 4)
# beyond a plain whole-array reduction of a supported dtype: (function, input, keyword arguments)
BEYOND_PLAIN = {
    "axis0-of-2d": ("sum", X2, {"axis": 0}),
    "axis1-of-2d": ("sum", X2, {"axis": 1}),
    "negative-axis-of-2d": ("min", X2, {"axis": -1}),
    "axis-of-3d": ("max", np.ones((2, 3, 4), np.float32), {"axis": 2}),
    "keepdims": ("sum", X1, {"keepdims": True}),
    "keepdims-max": ("max", X1, {"keepdims": True}),
    "where": ("sum", X1, {"where": MASK}),
    "where-and-initial": ("min", X1, {"where": MASK, "initial": 0.0}),
    "initial-sum": ("sum", X1, {"initial": 1.0}),
    "initial-max": ("max", X1, {"initial": 0.0}),
    "dtype-float64": ("sum", X1, {"dtype": np.float64}),
    "dtype-int32-prod": ("prod", np.ones(8, np.int32), {"dtype": np.int32}),
    "mean": ("mean", X1, {}),
    "argmin": ("argmin", X1, {}),
    "argmax": ("argmax", X1, {}),
}


# exact's min and max (and integer sums) are exact in any order: auto's kernels run them, with every argument;
# its floating sums and means are its own kernels', whole or along axes, with every argument but the operators
# and dtypes it has no exact kernel for (a product, argmin, argmax: refused)
_BEYOND_PLAIN_CASES = [(v, r) for v in TEACHING for r in sorted(BEYOND_PLAIN)
                       if not (v == "exact" and BEYOND_PLAIN[r][0] in ("min", "max", "sum", "mean"))]


@pytest.mark.skipif(not TEACHING, reason="no teaching variants registered")
@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("variant, request_", _BEYOND_PLAIN_CASES)
def test_teaching_variants_name_the_variants_that_can(variant, request_, source):
    name, a, kw = BEYOND_PLAIN[request_]
    with pytest.raises(ValueError) as e:
        call(name, on(source, a), variant=variant, **kw)
    for able in ABLE_VARIANTS:
        assert able in str(e.value), f"{able!r} is not named: {e.value}"


@pytest.mark.parametrize("request_", sorted(r for r, (name, _, _) in BEYOND_PLAIN.items() if name in ("min", "max")))
def test_exact_min_and_max_plan_autos_kernels_with_every_argument(request_):
    """exact's min and max (exact in any order) are planned on auto's kernels, so they take what auto takes; its
    floating sums run its own kernels, whole or along an axis (the correctly rounded ones)."""
    from gpureduce._planning.plan import prepare_reduce
    name, a, kw = BEYOND_PLAIN[request_]
    exact, _ = prepare_reduce(name, a, variant="exact", **kw)
    auto, _ = prepare_reduce(name, a, variant="auto", **kw)
    assert repr(exact) == repr(auto) and "variant auto" in repr(exact)
    assert "variant exact" in repr(prepare_reduce("sum", np.ones(8, np.float16), variant="exact")[0])
    assert "variant exact" in repr(prepare_reduce("sum", X2, axis=1, variant="exact")[0])


# whole-array reductions said another way: one dense segment in NumPy's result dtype, which the teaching variants'
# flat kernels run (out= is filled from their result)
WHOLE_ARRAY_TOO = {
    "all-axes-tuple-of-2d": ("sum", X2, {"axis": (0, 1)}),
    "fortran-order": ("sum", np.asfortranarray(X2), {}),
    "host-out": ("sum", X1, {"out": np.empty((), np.float32)}),
}


@pytest.mark.parametrize("request_", sorted(WHOLE_ARRAY_TOO))
@pytest.mark.parametrize("variant", TEACHING)
def test_teaching_variants_take_every_whole_array_reduction(variant, request_):
    name, a, kw = WHOLE_ARRAY_TOO[request_]
    if gpureduce.device_count() == 0:  # past every argument check: the device is what is missing
        with pytest.raises(gpureduce.CudaError, match="no CUDA device"):
            call(name, a, variant=variant, **kw)
        return
    got = call(name, a, variant=variant, **kw)
    assert np.asarray(got) == getattr(np, name)(a, **{k: v for k, v in kw.items() if k != "out"})


@pytest.mark.parametrize("variant", TEACHING)
def test_teaching_variants_through_reduce(variant):
    for op, kw in [("prod", {"axis": 1}) if variant == "exact" else ("mean", {}), ("argmax", {}),
                   ("sum", {"axis": 1} if variant != "exact" else {"axis": 1, "dtype": np.complex64})]:
        with pytest.raises(ValueError) as e:
            gpureduce.reduce(op, X2, variant=variant, **kw)
        for able in ABLE_VARIANTS:
            assert able in str(e.value), f"{op} {kw}: {able!r} is not named: {e.value}"


def _teaching_dtype_cases():
    for v in REDUCE_VARIANTS:
        if v.name in TEACHING:
            for d in DTYPE_NAMES:
                # (exact's complex sums and means are one of each part: gpureduce/_planning/exact_complex.py)
                if d not in v.dtypes and not ("exact" in v.properties and d.startswith("complex")):
                    yield pytest.param(v.name, d, id=f"{v.name}-{d}")


_TEACHING_DTYPE_CASES = list(_teaching_dtype_cases())
assert len(_TEACHING_DTYPE_CASES) >= 10, "the teaching variants' dtype lists no longer leave dtypes out"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("variant, dtype", _TEACHING_DTYPE_CASES)
def test_teaching_variants_refuse_dtypes_outside_their_list(variant, dtype, source):
    if dtype == "bfloat16" and source == "device":  # the CUDA Array Interface has no bfloat16 type string
        with pytest.raises(TypeError, match=r"unsupported dtype <V2 \(void\)"):
            gpureduce.sum(on(source, np.ones(8, dtype)), variant=variant)
        return
    with pytest.raises(ValueError) as e:
        gpureduce.sum(on(source, np.ones(8, dtype)), variant=variant)
    for able in ABLE_VARIANTS:
        assert able in str(e.value), f"{able!r} is not named: {e.value}"


# ---------------------------------------------------------------- operators, registry, signatures

@pytest.mark.parametrize("kind, op", [("reduce", "median"), ("reduce", "cumsum"), ("reduce", "mean_of_squares"),
                                      ("scan", "mean"), ("scan", "argmin"), ("scan", "argmax"), ("scan", "cumsum")])
def test_unknown_operator(kind, op):
    with pytest.raises(ValueError, match="unknown operator"):
        getattr(gpureduce, kind)(op, np.ones(4))


def test_reduce_registry_describes_every_variant():
    names = [v.name for v in REDUCE_VARIANTS]
    assert len(names) == len(set(names)) and set(ABLE_VARIANTS) <= set(names)
    for v in REDUCE_VARIANTS:
        assert isinstance(v.name, str) and isinstance(v.properties, tuple)
        assert v.dtypes and set(v.dtypes) <= set(DTYPE_NAMES), f"{v.name}: {v.dtypes}"
        assert v.ops and set(v.ops) <= set(gpureduce._registry.REDUCE_OPS), f"{v.name}: {v.ops}"


def test_public_names():
    for name in ALL_FUNCS + ["reduce", "scan"]:
        assert name in gpureduce.__all__ and callable(getattr(gpureduce, name))


NO_VALUE = object()
SIGNATURES = {
    # name: [(parameter, kind, default)]; NO_VALUE: a default that is not checked (initial's sentinel)
    "sum": [("a", "P", None), ("axis", "P", None), ("dtype", "P", None), ("out", "P", None), ("keepdims", "P", False),
            ("initial", "P", NO_VALUE), ("where", "P", True), ("variant", "K", "auto"), ("stream", "K", None)],
    "min": [("a", "P", None), ("axis", "P", None), ("out", "P", None), ("keepdims", "P", False),
            ("initial", "P", NO_VALUE), ("where", "P", True), ("variant", "K", "auto"), ("stream", "K", None)],
    "mean": [("a", "P", None), ("axis", "P", None), ("dtype", "P", None), ("out", "P", None), ("keepdims", "P", False),
             ("where", "K", True), ("variant", "K", "auto"), ("stream", "K", None)],
    "argmin": [("a", "P", None), ("axis", "P", None), ("out", "P", None), ("keepdims", "K", False),
               ("variant", "K", "auto"), ("stream", "K", None)],
    "cumsum": [("a", "P", None), ("axis", "P", None), ("dtype", "P", None), ("out", "P", None),
               ("exclusive", "K", False), ("variant", "K", "auto"), ("stream", "K", None)],
    "cummax": [("a", "P", None), ("axis", "P", None), ("out", "P", None), ("exclusive", "K", False),
               ("variant", "K", "auto"), ("stream", "K", None)],
}
SIGNATURES.update(prod=SIGNATURES["sum"], max=SIGNATURES["min"], argmax=SIGNATURES["argmin"],
                  cumprod=SIGNATURES["cumsum"], cummin=SIGNATURES["cummax"])


@pytest.mark.parametrize("name", ALL_FUNCS)
def test_signatures_follow_numpy(name):
    """NumPy's parameter order (positional calls like sum(a, 0, np.float64) mean the same), keyword-only
    variant/exclusive/stream, and NumPy's keyword-only ones (mean's where, argmin's keepdims)."""
    params = list(inspect.signature(getattr(gpureduce, name)).parameters.values())
    got = [(p.name, "K" if p.kind is p.KEYWORD_ONLY else "P") for p in params]
    assert got == [(n, k) for n, k, _ in SIGNATURES[name]]
    for p, (_, _, default) in zip(params, SIGNATURES[name]):
        if p.name != "a" and default is not NO_VALUE:
            assert p.default == default and type(p.default) is type(default), f"{p.name}={p.default!r}"


@pytest.mark.parametrize("op", ["min", "max", "sum", "prod", "nanmin"])
@pytest.mark.parametrize("dtype", ["uint64", "int8", "int64"])
def test_initial_is_converted_as_numpy_converts_it(op, dtype):
    """A Python int or float initial= into an integer dtype: truncated, and NumPy's OverflowError when it does not
    fit (the plan is made before any device work, so this runs without a GPU); a NumPy scalar is cast."""
    from gpureduce._planning.plan import prepare_reduce

    x = np.array([1, 2], dtype)
    numpy_op = getattr(np, op)
    for initial in (-1.0, -1, 2.5, 300, 1e30, np.float64(-1.0), np.int64(-3),
                    2**63, 2**64 - 1, 2**64, -2**63, -2**63 - 1):  # uint64 takes [2**63, 2**64), int64 does not
        try:
            numpy_op(x, initial=initial)
        except OverflowError as e:
            with pytest.raises(OverflowError, match=re.escape(str(e))):
                prepare_reduce(op, x, initial=initial)
            continue
        plan = prepare_reduce(op, x, initial=initial)[0]
        rt = np.dtype(gpureduce._registry.DTYPE_NAMES[plan.result_dtype])
        got = np.frombuffer(plan.initial, rt)[0]
        with np.errstate(all="ignore"):
            want = np.asarray(int(initial) if isinstance(initial, float) else initial).astype(rt)
        assert got == want, (initial, got, want)
