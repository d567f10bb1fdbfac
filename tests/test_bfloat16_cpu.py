"""bfloat16 without a GPU: the dtype is known by its type object (ml_dtypes registers it as a 2-byte void, which
other void arrays are not), its result dtypes are PyTorch's (float16's rules), its plans accumulate in float32
and widen with dtype=, and gpureduce.testing's bounds know its precision."""
import ml_dtypes
import numpy as np
import pytest

import gpureduce
from gpureduce import _core, _registry
from gpureduce._planning.operands import BFLOAT16, DTYPES, dtype_code, dtype_kind, finfo
from gpureduce._planning.plan import prepare_reduce, prepare_scan
from gpureduce.testing import error_bound

CODE = _registry.DTYPE_NAMES.index("bfloat16")
# the result dtype of each operator's rule for a bfloat16 input, as PyTorch gives it
RESULTS = {"SUM": "bfloat16", "SAME": "bfloat16", "MEAN": "bfloat16", "INDEX": "int64", "BOOL": "bool",
           "COUNT": "int64", "VAR": "bfloat16", "LOG": "bfloat16", "NORM": "bfloat16"}


def test_the_registry_knows_bfloat16_as_ml_dtypes_dtype():
    assert DTYPES[CODE] == np.dtype(ml_dtypes.bfloat16) == BFLOAT16
    assert dtype_code(BFLOAT16) == dtype_code("bfloat16") == dtype_code(ml_dtypes.bfloat16) == CODE
    assert dtype_kind(BFLOAT16) == "f" and dtype_kind(np.dtype("V2")) == "V"
    assert finfo(BFLOAT16).eps == 2.0 ** -7 and finfo(np.float32).eps == np.finfo(np.float32).eps


@pytest.mark.parametrize("op", _registry.OPERATORS, ids=lambda op: op.name)
def test_result_dtypes_are_pytorchs(op):
    got = _core.result_dtype(_core.KIND_REDUCE, op.code, CODE)
    assert _registry.DTYPE_NAMES[got] == RESULTS[op.result]
    if op.scans:
        assert _registry.DTYPE_NAMES[_core.result_dtype(_core.KIND_SCAN, op.code, CODE)] == RESULTS[op.result]


@pytest.mark.parametrize("op,kwargs,want", [
    ("sum", {}, BFLOAT16), ("sum", {"dtype": np.float32}, np.dtype(np.float32)),
    ("mean", {"dtype": np.float64}, np.dtype(np.float64)), ("var", {}, BFLOAT16), ("argmax", {}, np.dtype(np.int64)),
    ("any", {}, np.dtype(bool)), ("vector_norm", {}, BFLOAT16), ("logsumexp", {}, BFLOAT16),
    ("nanmean", {}, BFLOAT16), ("max", {}, BFLOAT16)])
def test_plans_of_host_arrays(op, kwargs, want):
    x = np.ones((6, 5), BFLOAT16)
    plan, _ = prepare_reduce(op, x, axis=1, **kwargs)
    assert DTYPES[plan.result_dtype] == want


def test_scan_plans():
    x = np.ones((6, 5), BFLOAT16)
    for op in ("sum", "prod", "max", "nansum", "logsumexp"):
        plan, _ = prepare_scan(op, x, axis=0)
        assert DTYPES[plan.result_dtype] == BFLOAT16, op
    plan, _ = prepare_scan("sum", x, axis=0, dtype=np.float64)
    assert DTYPES[plan.result_dtype] == np.float64


@pytest.mark.parametrize("func", ["sum", "max", "cumsum", "argmin"])
def test_other_two_byte_voids_are_refused(func):
    with pytest.raises(TypeError, match=r"unsupported dtype \|V2 \(void\).*bfloat16"):
        getattr(gpureduce, func)(np.zeros(4, "V2"))


def test_var_refuses_an_integer_dtype_as_for_float16():
    x = np.ones(8, BFLOAT16)
    with pytest.raises(TypeError):
        gpureduce.var(x, dtype=np.int32)


def test_error_bound_holds_the_float32_accumulator_and_one_bfloat16_rounding():
    # integers of at most 8 significant bits: the same values in bfloat16 and float16
    x = np.tile(np.arange(1, 101), 41).astype(np.float64)
    bound = float(error_bound("sum", x.astype(BFLOAT16), BFLOAT16))
    bound16 = float(error_bound("sum", x.astype(np.float16), np.float16))
    # the same float32 accumulation for both; only the final rounding differs (bfloat16's eps is 8 times
    # float16's), far from what a bfloat16 accumulator (eps 2^-8, not 2^-24) would need
    assert bound16 < bound <= 8 * bound16
    assert bound >= 2.0 ** -9 * x.sum()
