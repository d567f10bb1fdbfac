"""gpureduce/_planning/layout.py (axis merging) on the CPU: every plan, read back through NumPy strides exactly as the
kernels read it (out[i0, i1] = op over r of in[i0*is0 + i1*is1 + r*ir]), must give NumPy's reduction."""
import numpy as np
from hypothesis import given, settings, strategies as st

from gpureduce._planning.layout import c_strides, plan


@st.composite
def views(draw):
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    base = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    order = draw(st.permutations(range(len(shape))))
    a = base.transpose(order)
    steps = tuple(draw(st.sampled_from([1, 2, -1])) for _ in a.shape)
    a = a[tuple(slice(None, None, s) for s in steps)]
    axes = draw(st.sets(st.integers(0, a.ndim - 1)))
    return a, axes


def read_plan(a, seg):
    """The segment problem, evaluated the way the kernels index memory."""
    item = a.itemsize
    c0, c1 = seg.count
    view = np.lib.stride_tricks.as_strided(
        a, shape=(c0, c1, seg.reduce_count),
        strides=(seg.in_strides[0] * item, seg.in_strides[1] * item, seg.reduce_in_stride * item))
    sums = view.sum(axis=2)
    out = np.zeros(c0 * c1 + 1, np.int64)
    for i0 in range(c0):
        for i1 in range(c1):
            out[i0 * seg.out_strides[0] + i1 * seg.out_strides[1]] = sums[i0, i1]
    return out


@settings(max_examples=300, deadline=None)
@given(views())
def test_plans_reproduce_numpy(case):
    a, axes = case
    strides = tuple(s // a.itemsize for s in a.strides)
    kept_shape = tuple(e for i, e in enumerate(a.shape) if i not in axes)
    fresh = iter(c_strides(kept_shape))
    out_strides = tuple(0 if i in axes else next(fresh) for i in range(a.ndim))
    seg = plan(a.shape, strides, set(axes), out_strides=out_strides)
    if seg is None:  # needs a gather: only when the axes cannot merge into (2 kept, 1 reduced)
        return
    got = read_plan(a, seg)[: max(1, int(np.prod(kept_shape)))]
    want = np.sum(a, axis=tuple(axes)).ravel()
    np.testing.assert_array_equal(got[: want.size], want)


def test_contiguous_layouts_always_merge():
    for shape, axes in [((4, 5, 6), {1}), ((4, 5, 6), {0, 1, 2}), ((1024, 4), {0}), ((7, 3), {1})]:
        assert plan(shape, c_strides(shape), axes) is not None
