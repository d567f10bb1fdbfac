"""gpureduce's reductions and scans as PyTorch custom operators, so that ``torch.compile`` keeps them in its
graph (``fullgraph=True``, ``mode="reduce-overhead"`` too) instead of breaking it at gpureduce's C code.

Four operators, ``torch.ops.gpureduce.reduce``, ``torch.ops.gpureduce.scan``, ``torch.ops.gpureduce.segmented``
(reduceat and segmented_reduce with tensor bounds) and ``torch.ops.gpureduce.segmented_scan``, each with a fake (meta)
implementation that gives the result's shape and dtype by NumPy's rules (gpureduce._planning.plan, _operands), and a real
one that is the eager call: on PyTorch's current stream, into a tensor PyTorch allocates (so CUDA-graph capture
works).  While Dynamo traces, a public function called on a tensor with arguments the operators carry (axis,
dtype, keepdims, variant, ddof, ord, exclusive; tensor bounds; no out=, where= or initial=) becomes the operator call
(gpureduce/_streams.py routes it); any other call runs eagerly, a graph break.

They are registered when gpureduce is imported after torch, else at the first eager call once torch is
imported, or by ``gpureduce.register_torch_ops()``.
"""
import sys
import threading
from typing import List, Optional

_LOCK = threading.Lock()  # threads that meet torch at once register once
_REGISTERED = False
_UNAVAILABLE = False  # registration failed once (an old PyTorch): eager calls do not try again


def compiling() -> bool:
    """Whether Dynamo is tracing now (False without torch)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.compiler.is_compiling()


def register_if_imported():
    """Register the operators if torch is imported (cheap when done).  Where that fails (PyTorch before 2.4 has
    no torch.library.custom_op) gpureduce still works eagerly: one warning says torch.compile breaks its graph
    at gpureduce's calls."""
    global _UNAVAILABLE
    if _REGISTERED or _UNAVAILABLE or "torch" not in sys.modules:
        return
    try:
        register_torch_ops()
    except Exception as error:  # noqa: BLE001 -- any failure leaves the eager path as it is
        _UNAVAILABLE = True
        import warnings
        warnings.warn(f"gpureduce could not register its PyTorch custom operators ({type(error).__name__}: {error}); "
                      "torch.compile will break its graph at gpureduce's calls", RuntimeWarning, stacklevel=3)


def register_torch_ops():
    """Register gpureduce's reductions and scans as PyTorch custom operators, for ``torch.compile``.

    ``torch.ops.gpureduce.reduce``, ``torch.ops.gpureduce.scan`` and ``torch.ops.gpureduce.segmented`` (reduceat
    and segmented_reduce with tensor bounds), with fake implementations for shapes and dtypes, let
    ``torch.compile(f, fullgraph=True)``, ``mode="reduce-overhead"`` too, keep a call of a gpureduce function on a
    tensor in its graph: axis, dtype (a torch.dtype), keepdims, variant, ddof, ord and exclusive are carried; a
    call with out=, where= or initial= runs eagerly (a graph break).  Done once, when gpureduce is
    imported after torch or at its first call once torch is imported; call it before ``torch.compile`` where
    neither has happened yet.  Needs PyTorch 2.4 or later.

    Returns
    -------
    None

    Examples
    --------
    >>> import torch, gpureduce                                            # doctest: +SKIP
    >>> gpureduce.register_torch_ops()                                      # doctest: +SKIP
    >>> f = torch.compile(lambda t: gpureduce.sum(t, axis=0), fullgraph=True)  # doctest: +SKIP
    """
    with _LOCK:
        _register()


def _register():
    global _REGISTERED
    if _REGISTERED:
        return
    import torch
    from . import _core
    from ._planning.operands import default_dtype
    from ._planning.calls import reduce, scan
    from ._planning.numpy_rules import operator_for_dtype
    from ._planning.ranges import reduce_ranges, scan_ranges
    from ._planning.plan import ARG_OPS, reduced_axes
    from ._planning.results import torch_dtypes
    to_torch = torch_dtypes(torch)
    to_numpy = {kind: dt for dt, kind in to_torch.items()}

    def result_dtype(kind, op, a, dtype):
        if dtype is not None:
            return dtype
        return to_torch[default_dtype(op, to_numpy[a.dtype], kind)]

    def as_result(value, a):
        """The eager call's result as a tensor of its own (DLPack where gpureduce made a DeviceArray)."""
        if isinstance(value, torch.Tensor):
            return value
        return torch.from_dlpack(value).to(a.device)

    @torch.library.custom_op("gpureduce::reduce", mutates_args=())
    def reduce_op(a: torch.Tensor, op: str, axis: Optional[List[int]], keepdims: bool, dtype: Optional[torch.dtype],
                  variant: str, ddof: Optional[float], ord: Optional[float]) -> torch.Tensor:
        return as_result(reduce(op, a, None if axis is None else tuple(axis),
                                None if dtype is None else to_numpy[dtype], None, keepdims, variant=variant,
                                ddof=ddof, ord=ord), a)

    @reduce_op.register_fake
    def _(a, op, axis, keepdims, dtype, variant, ddof, ord):
        ndim = a.dim()
        axes = reduced_axes(op, None if axis is None else tuple(axis), ndim)
        if op in ARG_OPS and axis is None:
            shape = (1,) * ndim if keepdims else ()
        else:
            shape = tuple(1 if i in axes else e for i, e in enumerate(a.shape)) if keepdims else \
                tuple(e for i, e in enumerate(a.shape) if i not in axes)
        return a.new_empty(shape, dtype=result_dtype(_core.KIND_REDUCE, op, a, dtype))

    @torch.library.custom_op("gpureduce::scan", mutates_args=())
    def scan_op(a: torch.Tensor, op: str, axis: Optional[int], dtype: Optional[torch.dtype], variant: str,
                exclusive: bool) -> torch.Tensor:
        return as_result(scan(op, a, axis, None if dtype is None else to_numpy[dtype], None, exclusive=exclusive,
                              variant=variant), a)

    @scan_op.register_fake
    def _(a, op, axis, dtype, variant, exclusive):
        shape = (a.numel(),) if axis is None or a.dim() == 0 else tuple(a.shape)
        return a.new_empty(shape, dtype=result_dtype(_core.KIND_SCAN, op, a, dtype))

    @torch.library.custom_op("gpureduce::segmented", mutates_args=())
    def segmented_op(a: torch.Tensor, op: str, form: str, starts: torch.Tensor, stops: Optional[torch.Tensor],
                     axis: int, dtype: Optional[torch.dtype], variant: str, ddof: Optional[float]) -> torch.Tensor:
        bounds = (starts,) if form == "reduceat" else (starts, stops)
        return as_result(reduce_ranges(form, op, a, bounds, axis, None if dtype is None else to_numpy[dtype], None,
                                       variant=variant, ddof=ddof), a)

    @segmented_op.register_fake
    def _(a, op, form, starts, stops, axis, dtype, variant, ddof):
        ax = axis % a.dim() if a.dim() else 0
        shape = tuple(starts.shape[0] if i == ax else e for i, e in enumerate(a.shape))
        return a.new_empty(shape, dtype=result_dtype(_core.KIND_REDUCE, operator_for_dtype(op, to_numpy[a.dtype]),
                                                     a, dtype))

    @torch.library.custom_op("gpureduce::segmented_scan", mutates_args=())
    def segmented_scan_op(a: torch.Tensor, op: str, starts: torch.Tensor, stops: torch.Tensor, axis: int,
                          dtype: Optional[torch.dtype], variant: str, exclusive: bool) -> torch.Tensor:
        return as_result(scan_ranges(op, a, starts, stops, axis, None if dtype is None else to_numpy[dtype], None,
                                     exclusive, variant), a)

    @segmented_scan_op.register_fake
    def _(a, op, starts, stops, axis, dtype, variant, exclusive):
        return a.new_empty(tuple(a.shape), dtype=result_dtype(_core.KIND_SCAN, operator_for_dtype(
            op, to_numpy[a.dtype]), a, dtype))

    _REGISTERED = True


def route(kind, op, names, args, kwargs):
    """The call of public function (`kind`, `op`; `op` None for reduce() and scan(), which take it first) with
    parameter `names` as an operator call while Dynamo traces, or NotImplemented where the operators cannot
    carry it (not a tensor, out=, where=, initial=, an argument they lack, unregistered)."""
    if not _REGISTERED or kind not in ("reduce", "scan", "segmented", "segmented_scan"):
        return NotImplemented
    import torch
    from ._planning.numpy_rules import NoValue
    bound = dict(zip(names, args))
    bound.update(kwargs)
    if kind == "segmented":
        return _route_segmented(torch, bound, NoValue)
    if kind == "segmented_scan":
        return _route_segmented_scan(torch, bound)
    if op is None:
        op = bound.pop("op", None)
    a = bound.pop(names[1] if names[0] == "op" else names[0], None)
    if not isinstance(a, torch.Tensor) or not isinstance(op, str):
        return NotImplemented
    if bound.pop("out", None) is not None or bound.pop("where", True) is not True or \
            bound.pop("initial", NoValue) is not NoValue:
        return NotImplemented
    axis = bound.pop("axis", None)
    dtype = bound.pop("dtype", None)
    variant = bound.pop("variant", "auto")
    if (dtype is not None and not isinstance(dtype, torch.dtype)) or not isinstance(variant, str):
        return NotImplemented
    if kind == "scan":
        exclusive = bound.pop("exclusive", False)
        if bound or not (axis is None or isinstance(axis, int)):
            return NotImplemented
        return torch.ops.gpureduce.scan(a, op, axis, dtype, variant, bool(exclusive))
    keepdims = bound.pop("keepdims", False)
    ddof = bound.pop("ddof", None)
    ord = bound.pop("ord", None)
    if bound:
        return NotImplemented
    axis = None if axis is None else [axis] if isinstance(axis, int) else list(axis)
    return torch.ops.gpureduce.reduce(a, op, axis, bool(keepdims), dtype, variant,
                                      None if ddof is None else float(ddof), None if ord is None else float(ord))


def _route_segmented(torch, bound, no_value):
    """reduceat(op, a, indices, ...) or segmented_reduce(op, a, starts, stops, ...) as torch.ops.gpureduce.segmented,
    where the input and the bounds are tensors and no out= or initial= is given."""
    op, a = bound.pop("op", None), bound.pop("a", None)
    form = "reduceat" if "indices" in bound else "segmented_reduce"
    starts = bound.pop("indices" if form == "reduceat" else "starts", None)
    stops = bound.pop("stops", None)
    if not isinstance(a, torch.Tensor) or not isinstance(op, str) or not isinstance(starts, torch.Tensor) or \
            (form == "segmented_reduce" and not isinstance(stops, torch.Tensor)):
        return NotImplemented
    if bound.pop("out", None) is not None or bound.pop("initial", no_value) is not no_value:
        return NotImplemented
    axis, dtype, variant = bound.pop("axis", 0), bound.pop("dtype", None), bound.pop("variant", "auto")
    ddof = bound.pop("ddof", None)
    if bound or not isinstance(axis, int) or (dtype is not None and not isinstance(dtype, torch.dtype)) or \
            not isinstance(variant, str):
        return NotImplemented
    return torch.ops.gpureduce.segmented(a, op, form, starts, stops, axis, dtype, variant,
                                         None if ddof is None else float(ddof))



def _route_segmented_scan(torch, bound):
    """segmented_scan(op, a, starts, stops, ...) as torch.ops.gpureduce.segmented_scan, where the input and the
    bounds are tensors and no out= is given (the ranges' check waits once: for eager and fullgraph compiles, not for
    captured graphs)."""
    op, a, starts, stops = (bound.pop(name, None) for name in ("op", "a", "starts", "stops"))
    if not all(isinstance(t, torch.Tensor) for t in (a, starts, stops)) or not isinstance(op, str) or \
            bound.pop("out", None) is not None:
        return NotImplemented
    axis, dtype, variant = bound.pop("axis", 0), bound.pop("dtype", None), bound.pop("variant", "auto")
    exclusive = bound.pop("exclusive", False)
    if bound or not isinstance(axis, int) or (dtype is not None and not isinstance(dtype, torch.dtype)) or \
            not isinstance(variant, str):
        return NotImplemented
    return torch.ops.gpureduce.segmented_scan(a, op, starts, stops, axis, dtype, variant, bool(exclusive))
