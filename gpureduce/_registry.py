"""The variant and operator registry, as Python sees it: a view of the one lists in cuda/abi/variants.def and
cuda/abi/ops.def.

Nothing here names a variant or an operator: names, docs, properties, operators and dtypes all come from the
tables compiled into the extension (``_core.variant_table()``, ``_core.op_table``).
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field

import numpy as np

from . import _accuracy, _core

KINDS = {_core.KIND_REDUCE: "reduce", _core.KIND_SCAN: "scan"}


@dataclass(frozen=True)
class Operator:
    """One operator of cuda/abi/ops.def."""

    code: int     # its gr_op code
    name: str     # gpureduce.<name>; its scan, if it has one, is gpureduce.<scan_function_name(name)>
    scans: bool   # scanned too (along any axes, by the "axes" scan variants)
    flat: bool    # the whole-array variants may implement it (else the axis machinery only)
    result: str   # NumPy's result dtype with dtype=None: "SUM" (bool and narrow ints widen), "SAME", "MEAN", "INDEX",
                  # "BOOL", "COUNT", "VAR", "LOG", "NORM" (cuda/abi/ops.def says which dtypes each gives)
    exact: str    # the operator that serves integer and bool inputs: its own name, or (nansum) the one it equals there
    operands: str  # "ONE"; "TWO": pairs of elements of two arrays (dot); "ONE_OR_TWO": an optional second (logsumexp b)
    # NumPy's side
    keywords: tuple  # the optional keywords of dtype, initial and where that its NumPy function takes
    identity: bool   # an empty reduction, or one under where=, needs no initial= (NumPy's ufunc identity)
    ufunc: str       # NumPy's ufunc as its error messages name it ("maximum"); "" for none
    zero_d_axis: bool  # NumPy reduces a 0-d array over an int axis 0 (or -1), as ufunc.reduce does
    param: str       # what its parameter (riding in the plan's initial) is: "NONE", "DDOF", "ORD", "CONJ", "WEIGHTS"
    reference: str   # the function gpureduce.testing compares it with ("numpy.sum", "scipy.special.logsumexp")
    bound: str       # gpureduce.testing's error-bound family: "SUM", "PROD", "LOG", "OWN" (its own), "EXACT"


def _operator(code, row):
    name, scans, flat, result, exact, operands, keywords, *numpy_side = row
    return Operator(code, name, scans, flat, result, exact, operands, tuple(keywords.split()), *numpy_side)


OPERATORS = tuple(_operator(code, row) for code, row in enumerate(_core.op_table))
OP_NAMES = tuple(op.name for op in OPERATORS)  # index = gr_op code
REDUCE_OPS = OP_NAMES                           # every operator reduces
SCAN_OPS = tuple(op.name for op in OPERATORS if op.scans)
# what variant "exact" rounds once itself, of floating inputs (GR_OPS_EXACT_KERNEL, cuda/abi/gpureduce.h); of integer
# inputs, and its min and max, auto's kernels run (exact in any order)
EXACT_OPS = tuple(op.name for op in OPERATORS if _core.OPS_EXACT_KERNEL >> op.code & 1)
DTYPE_NAMES = tuple(_core.dtype_names)    # index = gr_dtype code


@dataclass(frozen=True)
class DType:
    """One element type of cuda/abi/dtypes.def."""

    code: int           # its gr_dtype code
    name: str           # NumPy's name (ml_dtypes' for bfloat16)
    kind: str           # "BOOL", "INT", "UINT", "FLOAT", "COMPLEX"
    itemsize: int
    accumulate_as: str  # what the kernels accumulate it in (float16 and bfloat16: float32)
    real: str           # the dtype of its real part (complex64: float32), else its own name


DTYPE_TABLE = tuple(DType(code, *row) for code, row in enumerate(_core.dtype_table))

_PROPERTY_NAMES = (
    (_core.PROP_DETERMINISTIC, "deterministic"),
    (_core.PROP_BASELINE, "baseline"),
    (_core.PROP_DEFAULT, "default"),
    (_core.PROP_BLOCK_LOCAL, "block_local"),
    (_core.PROP_AXES, "axes"),  # also runs the axis machinery: every NumPy argument, dtype and layout
    (_core.PROP_EXACT, "exact"),  # the correctly rounded sum: the same bits for every launch and order
)


@dataclass(frozen=True)
class Variant:
    """One algorithm variant: what it is, what it supports and where the seeds teach it."""

    index: int
    kind: str
    name: str
    doc: str
    seed: str
    deterministic: bool
    properties: tuple
    ops: tuple
    dtypes: tuple
    # the same dtypes as NumPy dtypes, for the hot path's membership test (dtype.name is slow)
    numpy_dtypes: frozenset = field(default=frozenset(), repr=False, compare=False)

    def supports(self, op: str, dtype: str | None = None) -> bool:
        return op in self.ops and (dtype is None or dtype in self.dtypes)

    @property
    def rounding(self) -> str:
        """Its longest chain of floating-point roundings, in words (gpureduce/_accuracy.py): a sum of n
        elements errs by at most that many times eps * sum(|x|)."""
        return _accuracy.describe(self.kind, self.name)

    def rounding_chain(self, n: int, sms: int | None = None, flat: bool = True) -> int:
        """The longest chain of roundings of a floating-point sum (scan: its last element) over `n` elements
        on a device of `sms` SMs (default: an H100/H200's 132); `flat=False` for the axis kernels' layouts.
        The worst-case error is about ``rounding_chain(n) * eps * sum(|x|)``, the typical one its square root
        times that."""
        return _accuracy.chain(self.kind, self.name, n, sms, flat)


def _bits(mask, names):
    return tuple(name for i, name in enumerate(names) if mask & (1 << i))


def _load():
    table = []
    for index, kind, name, props, ops, dtypes, seed, doc in _core.variant_table():
        table.append(Variant(
            index=index,
            kind=KINDS[kind],
            name=name,
            doc=doc,
            seed=seed,
            deterministic=bool(props & _core.PROP_DETERMINISTIC),
            properties=tuple(label for bit, label in _PROPERTY_NAMES if props & bit),
            ops=_bits(ops, OP_NAMES),
            dtypes=_bits(dtypes, DTYPE_NAMES),
            numpy_dtypes=frozenset(np.dtype(name) for name in _bits(dtypes, DTYPE_NAMES)),
        ))
    return tuple(table)


ALL = _load()


def scan_function_name(op: str) -> str:
    """The public scan function of operator `op`, as NumPy and PyTorch name it: "cum" inserted after a "nan" or
    "log" prefix, else before the name (sum: cumsum, nansum: nancumsum, logsumexp: logcumsumexp)."""
    for prefix in ("nan", "log"):
        if op.startswith(prefix):
            return prefix + "cum" + op[len(prefix):]
    return "cum" + op


# The public scan functions (cumsum -> sum, nancumsum -> nansum, ...), for the operators scan variants have.
SCAN_FUNCTIONS = {scan_function_name(op): op for op in SCAN_OPS}


def implements(v: Variant, op: str) -> bool:
    """Whether `v` implements operator `op`: its flat kernels' operators, and for a variant flagged "axes" every
    operator of the axis machinery of its kind (a reduction variant's: mean, argmin and argmax too)."""
    return op in v.ops or ("axes" in v.properties and op in (REDUCE_OPS if v.kind == "reduce" else SCAN_OPS))


def variants(kind: str | None = None, op: str | None = None):
    """The registered variants, in declaration order, optionally only those of one kind that implement `op`.

    `op` is an operator ("sum", "mean", "argmax", ...: of either kind) or a scan function ("cumsum", ...:
    the scan variants of its operator); an unknown name gives an empty list.
    """
    if kind is not None and kind not in KINDS.values():
        raise ValueError(f"unknown kind {kind!r}; kinds are {', '.join(sorted(KINDS.values()))}")
    if op in SCAN_FUNCTIONS:
        if kind not in (None, "scan"):
            return []
        kind, op = "scan", SCAN_FUNCTIONS[op]
    return [v for v in ALL if (kind is None or v.kind == kind) and (op is None or implements(v, op))]


_RESOLVED = {}


def resolve(kind: str, name, op: str) -> Variant:
    """The variant called `name` of this kind that implements `op`, or a ValueError that lists the choices."""
    if not isinstance(name, str):
        raise TypeError(f"variant must be a str, not {type(name).__name__}")
    hit = _RESOLVED.get((kind, name, op))
    if hit is not None:
        return hit
    _RESOLVED[(kind, name, op)] = v = _resolve(kind, name, op)
    return v


def _resolve(kind: str, name: str, op: str) -> Variant:
    of_kind = [v for v in ALL if v.kind == kind]
    for v in of_kind:
        if v.name == name:
            if op not in v.ops:
                able = ", ".join(x.name for x in of_kind if op in x.ops)
                raise ValueError(f"variant {name!r} does not implement {op}; variants that do: {able}")
            return v
    names = [v.name for v in of_kind]
    raise ValueError(f"unknown {kind} variant {name!r}{did_you_mean(name, names)}; valid variants: {', '.join(names)}")


def did_you_mean(word: str, choices) -> str:
    """The hint " (did you mean 'shuffle'?)" naming the choice closest to `word` (case ignored), or "" if none is."""
    by_folded = {c.casefold(): c for c in choices}
    close = difflib.get_close_matches(word.casefold(), list(by_folded), n=1, cutoff=0.6)
    return f" (did you mean {by_folded[close[0]]!r}?)" if close else ""
