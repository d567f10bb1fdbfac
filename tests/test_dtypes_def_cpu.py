"""The one list of dtypes (cuda/abi/dtypes.def), checked without a GPU: what the extension was built from, the
Python tables that come from it, and that each row says what NumPy and DLPack say of the dtype."""
import re
from pathlib import Path

import numpy as np
import pytest

from gpureduce import _core, _registry
from gpureduce._planning import operands

ROOT = Path(__file__).resolve().parent.parent
DTYPES_DEF = ROOT / "cuda" / "abi" / "dtypes.def"
LINE = re.compile(r"^GR_DTYPE\(\s*(\w+)\s*,\s*(\w+)\s*,\s*([\w:]+)\s*,\s*(BOOL|INT|UINT|FLOAT|COMPLEX)\s*,\s*(\d+)\s*,"
                  r"\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*,\s*(\w+)\s*\)", re.M)
LETTER = {"BOOL": "b", "INT": "i", "UINT": "u", "FLOAT": "f", "COMPLEX": "c"}


def declared():
    if not DTYPES_DEF.exists():
        pytest.skip("needs the source tree (cuda/abi/dtypes.def)")
    rows = LINE.findall(DTYPES_DEF.read_text())
    assert rows, "no GR_DTYPE line in dtypes.def"
    return rows


def test_the_extension_was_built_from_the_list():
    rows = declared()
    names = {NAME: name for NAME, name, *_ in rows}
    assert _core.dtype_names == tuple(name for _, name, *_ in rows)
    assert _core.dtype_table == tuple((name, kind, int(size), names[acc], names[real])
                                      for _, name, _, kind, size, _, _, _, acc, real in rows)
    assert all(NAME == name.upper() for NAME, name, *_ in rows)


def test_each_row_is_what_numpy_says():
    """kind, size, NumPy's type number, its sum promotion and its real part, against NumPy itself (bfloat16: ml_dtypes'
    dtype, which NumPy sums in its own type as gpureduce does)."""
    rows = declared()
    names = {NAME: name for NAME, name, *_ in rows}
    for NAME, name, _, kind, size, numpy_num, dlpack, sum_as, _, real in rows:
        dt = operands.DTYPES[_core.dtype_names.index(name)]
        assert dt.itemsize == int(size), name
        assert operands.dtype_kind(dt) == LETTER[kind], name
        if name == "bfloat16":
            assert numpy_num == "NOTYPE" and dlpack == "Bfloat"
            continue
        assert dt == np.dtype(getattr(np, numpy_num.lower())), name
        assert np.sum(np.ones(1, dt)).dtype == np.dtype(names[sum_as]), name
        assert np.ones(1, dt).real.dtype == np.dtype(names[real]), name
        assert dlpack == {"b": "Bool", "i": "Int", "u": "UInt", "f": "Float", "c": "Complex"}[dt.kind], name


def test_python_tables_come_from_the_list():
    table = _registry.DTYPE_TABLE
    assert [d.code for d in table] == list(range(len(table))) and tuple(d.name for d in table) == _registry.DTYPE_NAMES
    wide = {d.name: d.accumulate_as for d in table if d.accumulate_as != d.name}
    assert wide == {"float16": "float32", "bfloat16": "float32"}
    assert {dt.name: acc.name for dt, acc in operands.ACCUMULATOR.items()} == wide
