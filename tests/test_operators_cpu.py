"""The one list of operators (cuda/abi/ops.def), checked without a GPU: what the extension was built from, the
Python tables generated from it, NumPy's result dtypes per rule, and the axis kernel files setup.py writes."""
import importlib
import inspect
import re
import runpy
import warnings
from pathlib import Path

import numpy as np
import pytest
import setuptools

import gpureduce
from gpureduce import _bounds, _core, _registry

benchmark = importlib.import_module("gpureduce.benchmark")  # the module (gpureduce.benchmark is its function)

ROOT = Path(__file__).resolve().parent.parent
OPS_DEF = ROOT / "cuda" / "abi" / "ops.def"
LINE = re.compile(r"^GR_OP\(\s*(\w+)\s*,\s*(\w+)\s*,\s*(YES|NO)\s*,\s*(YES|NO)\s*,\s*(\w+)\s*,\s*(\w+)\s*,"
                  r"\s*(ONE|TWO|ONE_OR_TWO)\s*,\s*\"([\w ]*)\"\s*,\s*(YES|NO)\s*,\s*\"(\w*)\"\s*,\s*(YES|NO)\s*,\s*(\w+)\s*,"
                  r"\s*\"([\w.]+)\"\s*,\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)


def declared():
    if not OPS_DEF.exists():
        pytest.skip("needs the source tree (cuda/abi/ops.def)")
    return LINE.findall(OPS_DEF.read_text())


def test_the_extension_was_built_from_the_list():
    rows = declared()
    assert rows, "no GR_OP line in ops.def"
    names = {NAME: name for NAME, name, *_ in rows}
    assert _core.op_table == tuple((name, scans == "YES", flat == "YES", result, names[exact], operands, keywords,
                                    identity == "YES", ufunc, zero_d == "YES", param, reference, bound)
                                   for _, name, scans, flat, result, exact, operands, keywords, identity, ufunc, zero_d,
                                   param, reference, bound, _kernels in rows)
    assert _core.op_names == tuple(name for _, name, *_ in rows)
    assert all(NAME == name.upper() for NAME, name, *_ in rows)


def test_python_tables_come_from_the_list():
    ops = _registry.OPERATORS
    assert [op.code for op in ops] == list(range(len(ops)))
    assert _registry.REDUCE_OPS == tuple(op.name for op in ops)
    assert _registry.SCAN_OPS == tuple(op.name for op in ops if op.scans)
    assert _registry.SCAN_FUNCTIONS == {_registry.scan_function_name(op.name): op.name for op in ops if op.scans}
    assert set(benchmark.OPERATORS) == ({op.name for op in ops if op.flat}
                                        | {"cum" + op.name for op in ops if op.flat and op.scans})
    for op in ops:  # each operator is a public function with NumPy's name, its scan too
        assert callable(getattr(gpureduce, op.name)), op.name
        if op.scans:
            assert callable(getattr(gpureduce, _registry.scan_function_name(op.name))), op.name
    # the whole-array variants implement `flat` operators only (and exact its EXACT_OPS, the mean too); the axis
    # variants every operator of their kind
    for v in _registry.ALL:
        assert all(next(op for op in ops if op.name == name).flat or ("exact" in v.properties and
                                                                      name in _registry.EXACT_OPS)
                   for name in v.ops), v.name
        if "axes" in v.properties:
            able = _registry.REDUCE_OPS if v.kind == "reduce" else _registry.SCAN_OPS
            assert all(_registry.implements(v, name) for name in able), v.name


# each operator's reference, from its record (ops.def's reference column: NumPy's function, SciPy's logsumexp)
NUMPY = {name: function for name, function in _bounds.NUMPY_FUNCTIONS.items() if name in _registry.REDUCE_OPS}
NUMPY["dot"] = lambda a: np.dot(a, a)  # two operands: a with itself
NUMPY_SCANS = {"sum": np.cumsum, "prod": np.cumprod, "min": np.minimum.accumulate, "max": np.maximum.accumulate,
               "nansum": np.nancumsum, "nanprod": np.nancumprod,
               "logsumexp": lambda a: np.logaddexp.accumulate(a if a.dtype.kind == "f" else a.astype(np.float64))}


def test_scan_functions_are_named_as_numpy_and_pytorch_name_them():
    assert _registry.scan_function_name("sum") == "cumsum"
    assert _registry.scan_function_name("nanprod") == "nancumprod"
    assert _registry.scan_function_name("logsumexp") == "logcumsumexp"


@pytest.mark.parametrize("dtype", _registry.DTYPE_NAMES)
@pytest.mark.parametrize("op", _registry.OPERATORS, ids=lambda op: op.name)
def test_result_rules_give_numpys_dtypes(op, dtype):
    """Each operator's result rule gives the dtype NumPy's function gives with dtype=None (logsumexp: none for
    complex inputs, which it does not take)."""
    assert op.name in NUMPY, f"operator {op.name} has no NumPy reference here: add it"
    if op.result == "LOG" and np.dtype(dtype).kind == "c":
        for kind in (_core.KIND_REDUCE, _core.KIND_SCAN):
            assert _core.result_dtype(kind, op.code, _registry.DTYPE_NAMES.index(dtype)) == len(_registry.DTYPE_NAMES)
        return
    # NumPy has no bfloat16 rules of its own (ml_dtypes' dtype is no float to it): bfloat16 follows float16's, as
    # PyTorch's rules do
    probe = "float16" if dtype == "bfloat16" else dtype
    as_given = (lambda name: "bfloat16" if name == "float16" else name) if probe != dtype else (lambda name: name)
    try:
        want = np.asarray(NUMPY[op.name](np.ones(3, probe))).dtype
    except TypeError:  # NumPy has no such loop (ptp of bool): the plan refuses it before the rule is asked
        return
    got = _core.result_dtype(_core.KIND_REDUCE, op.code, _registry.DTYPE_NAMES.index(dtype))
    assert _registry.DTYPE_NAMES[got] == as_given(want.name)
    if op.scans:
        assert op.name in NUMPY_SCANS, f"scan of {op.name} has no NumPy reference here: add it"
        got = _core.result_dtype(_core.KIND_SCAN, op.code, _registry.DTYPE_NAMES.index(dtype))
        assert _registry.DTYPE_NAMES[got] == as_given(NUMPY_SCANS[op.name](np.ones(3, probe)).dtype.name)


def test_setup_writes_each_axis_operator_into_one_kernel_file_per_family(tmp_path, monkeypatch):
    """Every (family, operator) is in exactly one written unit: a unit of its own for the hot operators of
    cuda/abi/hot_set.def (their kernels compile in parallel; CUB's families: its GR_HOT_CUB lines), the others
    together (host code only)."""
    if not (ROOT / "setup.py").exists():
        pytest.skip("needs the source tree (setup.py)")
    monkeypatch.setattr(setuptools, "setup", lambda **kwargs: None)
    build = runpy.run_path(str(ROOT / "setup.py"))
    paths = [Path(p) for p in build["write_axis_sources"](tmp_path)]
    hot_def = (ROOT / "cuda" / "abi" / "hot_set.def").read_text()
    hot = {family: set(re.findall(rf"^GR_HOT_CUB\({'SCAN' if scans else 'REDUCE'}, (\w+),", hot_def, re.M))
           if "cub" in family else
           set(re.findall(rf"^GR_HOT_{'SCAN' if scans else 'REDUCE'}\((\w+)\)", hot_def, re.M))
           for family, scans in (("reduce_segments", False), ("reduce_segments_cub", False),
                                 ("scan_segments", True), ("scan_segments_cub", True))}
    families = {"reduce_segments": False, "reduce_segments_cub": False, "scan_segments": True,
                "scan_segments_cub": True}  # -> for scanning operators only
    # an operator whose axis kernels are another's (the `kernels` column: std runs var's) has no unit
    expected = {(family, NAME) for NAME, _, scans, *_, kernels in declared() if kernels == NAME
                for family, scan_only in families.items() if scans == "YES" or not scan_only}
    written = []
    for p in paths:
        family = next(f for f in sorted(families, key=len, reverse=True) if p.name.startswith(f + "_"))
        macro = "GR_" + family.upper() + "_OP"
        header = ROOT / "cuda" / "axis" / f"{family}.cuh"
        text = p.read_text()
        assert f'#include "axis/{family}.cuh"' in text, text
        assert f"#define {macro}(OP)" in header.read_text(), f"{header.name} defines no {macro}"
        members = re.findall(rf"^{macro}\((\w+)\)$", text, re.M)
        if any(m in hot[family] for m in members):  # a hot operator: a unit of its own, named for it
            assert members == [p.stem[len(family) + 1:].upper()], (p.name, members)
        written += [(family, m) for m in members]
    assert sorted(written) == sorted(expected)  # each once
    mtimes = {p: p.stat().st_mtime_ns for p in paths}
    build["write_axis_sources"](tmp_path)  # unchanged text: not rewritten, so the object cache keeps them
    assert {p: p.stat().st_mtime_ns for p in paths} == mtimes


def test_the_numpy_side_of_each_record_is_numpys():
    """ops.def's NumPy columns say what NumPy's function does: the keywords of dtype, initial and where its
    signature has, a reference that exists, an identity exactly where NumPy refuses an empty reduction."""
    for op in _registry.OPERATORS:
        assert set(op.keywords) <= {"dtype", "initial", "where"}, op
        assert op.param in ("NONE", "DDOF", "ORD", "CONJ", "WEIGHTS") and op.bound in ("SUM", "PROD", "LOG", "OWN",
                                                                                      "EXACT"), op
        if not op.reference.startswith("numpy."):
            assert op.reference == "scipy.special.logsumexp", op
            continue
        function = np
        for part in op.reference.split(".")[1:]:
            function = getattr(function, part, None)
        if function is None:  # numpy.linalg.vector_norm before NumPy 2
            continue
        try:
            parameters = inspect.signature(function).parameters
        except (TypeError, ValueError):  # a C function without a text signature (numpy.dot)
            continue
        assert set(op.keywords) == {k for k in ("dtype", "initial", "where") if k in parameters}, op
        if op.operands == "ONE" and op.result != "INDEX" and op.name not in ("mean", "nanmean"):
            empty = np.zeros((0,), np.float64)
            try:
                with np.errstate(all="ignore"), warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    function(empty)
                refused = False
            except ValueError:
                refused = True
            assert refused == (not op.identity), op

