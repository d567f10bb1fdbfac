"""The caller's stream: the ``stream=`` keyword every public function takes.

Without it (``stream=None``) a device call runs where its input's library works: PyTorch's or CuPy's current
stream, the stream a ``__cuda_array_interface__`` names, the legacy default stream a DLPack producer is told.
With it, the call runs on that stream, after the streams its arrays were made on (an event, where they are
known and another), and an out= of the caller's library is ordered after the work on its own stream too.
The stream is a call's context (``_core.call_stream``, a context variable the C intake reads), so the calls one
function makes for another (mean's sum, a cast before a reduction) run there as well.
"""
from __future__ import annotations

import functools
import inspect
import re
import sys
import textwrap

from . import _core, _torch_ops

ACCEPTED = ("None (the input library's current stream), an int cudaStream_t handle (0: the legacy default "
            "stream), a cupy.cuda.Stream, a torch.cuda.Stream, or an object with __cuda_stream__")


def handle_of(stream) -> int:
    """The cudaStream_t handle of `stream` as an int, or TypeError naming what is accepted."""
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise ValueError(f"stream={stream}: a stream handle is a non-negative int")
        return stream
    protocol = getattr(type(stream), "__cuda_stream__", None)  # CUDA Python's stream protocol: (version, handle)
    if protocol is not None:
        return int(stream.__cuda_stream__()[1])
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        handle = getattr(stream, attribute, None)
        if isinstance(handle, int) and not isinstance(handle, bool):
            return handle
    raise TypeError(f"stream= must be {ACCEPTED}; got {type(stream).__name__}")


def takes_stream(func, kind=None, op=None):
    """`func`, public function (`kind`, `op`) of gpureduce, with a keyword-only ``stream=`` (see the module's
    text): unset, the call is `func`'s own.  While torch.compile traces it, a call on a tensor becomes a PyTorch
    custom operator where one carries it (gpureduce/_torch_ops.py: kind "reduce", "scan" or "segmented")."""
    names = [name for name, p in inspect.signature(func).parameters.items()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]

    @functools.wraps(func)
    def call(*args, stream=None, **kwargs):
        if "torch" in sys.modules:
            if _torch_ops.compiling():
                routed = _torch_ops.route(kind, op, names, args, kwargs) if stream is None else NotImplemented
                if routed is not NotImplemented:
                    return routed
            else:
                _torch_ops.register_if_imported()
        if stream is None:
            return func(*args, **kwargs)
        token = _core.call_stream.set(handle_of(stream))
        try:
            return func(*args, **kwargs)
        finally:
            _core.call_stream.reset(token)

    signature = inspect.signature(func)
    parameter = inspect.Parameter("stream", inspect.Parameter.KEYWORD_ONLY, default=None)
    parameters = list(signature.parameters.values())
    last = len(parameters) - 1 if parameters and parameters[-1].kind is inspect.Parameter.VAR_KEYWORD else \
        len(parameters)
    call.__signature__ = signature.replace(parameters=parameters[:last] + [parameter] + parameters[last:])
    if func.__doc__:
        call.__doc__ = _with_stream_parameter(func.__doc__)
    return call


_STREAM_DOC = (
    "stream : None, int, cupy.cuda.Stream or torch.cuda.Stream, keyword-only",
    "    The CUDA stream a device call runs on; None (default): the input library's current stream (PyTorch's, "
    "CuPy's, the one a __cuda_array_interface__ names).  The call is ordered after the streams its arrays were "
    "made on; its result is asynchronous on that stream.",
)


def _with_stream_parameter(doc: str) -> str:
    """`doc` with the stream parameter described after the last parameter of its Parameters section."""
    lines = doc.splitlines()
    try:
        start = next(i for i in range(len(lines) - 1)
                     if lines[i].strip() == "Parameters" and set(lines[i + 1].strip()) == {"-"})
    except StopIteration:
        return doc
    indent = re.match(r"\s*", lines[start]).group(0)
    end = start + 2
    while end < len(lines) and not (lines[end].strip() and end + 1 < len(lines)
                                    and set(lines[end + 1].strip()) == {"-"}):
        end += 1
    while end > start + 2 and not lines[end - 1].strip():
        end -= 1
    head, body = _STREAM_DOC
    described = [indent + head] + textwrap.wrap(body.strip(), 100, initial_indent=indent + "    ",
                                                 subsequent_indent=indent + "    ")
    return "\n".join(lines[:end] + described + lines[end:])
