"""Row reductions (axis=-1 of C-ordered arrays) by each of the row kernels of cuda/axis/segments.cuh, against NumPy:

* packed_rows_kernel: rows of R = 1, 2, 4 or 8 elements packed in 16-byte vectors, R a compile-time constant;
  row counts that do and do not fill the last vector, a strided out= (one result per store instead of a
  vector's results in one store), and a view off the 16-byte grid (which goes to another kernel);
* vector_rows_kernel: aligned rows of a few whole vectors, one vector per lane;
* rows_kernel: a warp per row, rows of a few hundred to a few thousand elements, lengths that are not a
  multiple of the warp's loads in flight;
* block_rows_kernel: a few long rows, a block (or several, then a second pass) per row."""
import ml_dtypes
import numpy as np
import pytest

from conftest import reduction_data as data
from gpureduce.testing import assert_matches_numpy

pytestmark = pytest.mark.gpu

DTYPES = ["int8", "uint8", "int16", "float16", np.dtype(ml_dtypes.bfloat16), "int32", "float32", "int64",
          "float64", "complex64", "bool"]
OPS = ["sum", "max", "argmax", "mean", "var", "count_nonzero", "prod", "nanmin"]


def supported(op, dtype):
    """Complex numbers: no extremes here (NumPy orders them lexicographically; that is the parity tests' job)."""
    return not (np.dtype(dtype).kind == "c" and op in ("max", "argmax", "nanmin"))


def cases(dtypes, ops):
    return [pytest.param(dtype, op, id=f"{dtype}-{op}") for dtype in dtypes for op in ops if supported(op, dtype)]


@pytest.mark.parametrize("dtype, op", cases(DTYPES, OPS))
def test_short_rows_packed_in_vectors(rng, dtype, op):
    cupy = pytest.importorskip("cupy")
    itemsize = np.dtype(dtype).itemsize
    for length in (1, 2, 4, 8):
        if length * itemsize >= 16:
            continue  # a row fills a vector: another kernel
        for rows in (1, 3, 1021, 4096 + 5):
            x = data(rng, dtype, (rows, length), op)
            assert_matches_numpy(op, x, axis=1)
            assert_matches_numpy(op, x[1:], axis=1)  # one row off the vectors' grid
            if np.dtype(dtype) != ml_dtypes.bfloat16:  # (CuPy has no bfloat16)
                # a strided result on the device: each row's result stored on its own
                out_dtype = getattr(np, op)(x[:1], axis=1).dtype
                out = cupy.zeros(2 * rows, out_dtype)[::2]
                assert_matches_numpy(op, cupy.asarray(x), axis=1, out=out)


@pytest.mark.parametrize("dtype, op", cases(["int8", "float16", "float32", "float64", "complex64"],
                                             ["sum", "argmax", "mean", "var", "prod"]))
@pytest.mark.parametrize("shape", [(3000, 12), (5000, 64), (777, 100), (2049, 256)], ids=str)
def test_rows_of_a_few_vectors(rng, dtype, op, shape):
    x = data(rng, dtype, shape, op)
    assert_matches_numpy(op, x, axis=1)
    assert_matches_numpy(op, x[::-1], axis=1)  # reversed rows: a negative row stride
    assert_matches_numpy(op, x[:, 1:], axis=1)  # rows off the 16-byte grid


@pytest.mark.parametrize("op", ["sum", "argmin", "mean", "var", "nanmin"])
@pytest.mark.parametrize("dtype", ["int8", "float32", "float64"], ids=str)
@pytest.mark.parametrize("shape", [(16384, 1024), (20000, 1000), (9000, 3001), (1024, 2**14 + 3), (3, 2**20 + 1)],
                         ids=str)
def test_long_rows(rng, dtype, op, shape):
    x = data(rng, dtype, shape, op)
    assert_matches_numpy(op, x, axis=1)
    assert_matches_numpy(op, x[:, 3:], axis=1)  # rows off the 16-byte grid
