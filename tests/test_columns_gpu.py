"""Column reductions of narrow elements (bool, 8- and 16-bit): the columns kernel reads several adjacent columns per
lane as one load where they lie side by side and aligned (cuda/axis/segments.cuh: column_pack), one column per
lane otherwise.  Both, against NumPy: column counts that are and are not multiples of the pack, 3-D arrays (i0 >
1), reversed rows, views shifted off the alignment, where= (which takes the one-column path)."""
import ml_dtypes
import numpy as np
import pytest

from conftest import reduction_data as data
from gpureduce.testing import assert_matches_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["bool", "int8", "uint8", "int16", "uint16", "float16", np.dtype(ml_dtypes.bfloat16)]
OPS = ["sum", "max", "argmax", "any", "count_nonzero", "mean", "var", "nanmax", "prod"]
SHAPES = [(1, 8), (3, 16), (1000, 32), (257, 48), (64, 256), (33, 4112), (5, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_columns_of_narrow_elements(rng, dtype, op, shape):
    x = data(rng, dtype, shape, op)
    assert_matches_numpy(op, x, axis=0)
    assert_matches_numpy(op, x[::-1], axis=0)  # reversed rows: a negative row stride
    assert_matches_numpy(op, x[:, 1:], axis=0)  # one element off the packs' alignment


@pytest.mark.parametrize("op", ["sum", "argmax", "any", "var"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_columns_of_3d_arrays_and_where(rng, dtype, op):
    x = data(rng, dtype, (4, 300, 64), op)
    assert_matches_numpy(op, x, axis=1)
    assert_matches_numpy(op, x[:, :, 8:], axis=1)  # still aligned for 8-byte packs, not 16
    if op != "argmax":
        assert_matches_numpy(op, x, axis=1, where=data(rng, bool, (300, 64), op))
