"""What the public functions' docstrings share, generated at import time: the "Variants" paragraph and the
descriptions of the parameters every function takes.

``help(gpureduce.sum)`` lists the variants that implement ``sum``, read from the table compiled from
cuda/abi/variants.def (``gpureduce._registry``): a variant added there shows up in every docstring without an
edit here, and so does a dtype in the description of `a`.  Nothing in this module names a variant or a dtype.
A docstring line that holds only ``%(name)s`` is replaced by the shared description `name` (SHARED, wrapped) or the
shared block of lines `name` (BLOCKS, verbatim).
"""
from __future__ import annotations

import inspect
import re
import string
import textwrap

from ._registry import DTYPE_NAMES, variants
from ._streams import takes_stream

_WIDTH = 100
# The order the markers are shown in, and what each registry property is called in the list.
_MARKERS = (("default", "default"), ("axes", "axes"), ("baseline", "baseline"), ("block_local", "block-local"))


def _markers(v) -> list:
    marks = [label for prop, label in _MARKERS if prop in v.properties]
    if not v.deterministic:
        marks.append("not deterministic")
    return marks


def variants_paragraph(kind: str, op: str | None = None) -> str:
    """The paragraph (reST, no indentation) listing the `kind` variants that implement `op`.

    One bullet per variant, in declaration order: its name, its markers ("default": what ``variant="auto"``
    means; "axes": covers every argument, layout and dtype; "not deterministic": results may differ in the
    last bits from run to run), its one-line doc and, for the others, the dtypes it reduces or scans.
    """
    listed = variants(kind=kind, op=op)
    if op is None:
        source = f'``gpureduce.variants(kind="{kind}")``'
    elif all(op in v.ops for v in listed):
        source = f'``gpureduce.variants(kind="{kind}", op="{op}")``'
    else:  # mean, argmin, argmax: only the axis machinery implements them
        source = f'the variants of ``gpureduce.variants(kind="{kind}")`` that implement {op}'
    head = f"Variants ({source}, chosen with ``variant=``)."
    if any("axes" in v.properties for v in listed):
        head += "  Those marked *axes* cover every argument, memory layout and dtype."
    if any("axes" not in v.properties for v in listed):
        if kind == "reduce":
            head += ("  The others reduce a whole C- or Fortran-ordered array of their dtypes (``axis=None``, or "
                     "the axis of a 1-d array) with no dtype, out, keepdims, initial or where")
            if any("exact" in v.properties for v in listed):
                head += (" (but *exact*, whose sums, means and their nan forms of floating and complex arrays take "
                         "every axis, where, initial, keepdims, out, and a dtype that holds the elements exactly)")
        else:
            head += ("  The others scan a host or C-contiguous device array flattened in C order (``axis=None``, "
                     "or the axis of a 1-d array) of their dtypes, in NumPy's result dtype")
        head += ", and raise ValueError for anything else."
    head += ("  A floating-point result errs by at most its variant's longest chain of roundings times eps times "
             "the sum of the magnitudes (``Variant.rounding_chain(n)``), typically by its square root times that.")
    if any(not v.deterministic for v in listed):
        head += ("  Those marked *not deterministic* may give floating-point sums and products that differ in "
                 "the last bits from run to run.")
    lines = textwrap.wrap(head, _WIDTH, break_on_hyphens=False)
    lines.append("")
    if not listed:
        lines.append("(none registered in this build)")
    for v in listed:
        marks = _markers(v)
        label = f"``{v.name}``" + (f" ({', '.join(marks)})" if marks else "")
        text = f"{label} -- {v.doc}."
        if op is None:
            ops = "every operator" if "axes" in v.properties else ", ".join(v.ops)
            text += f"  Operators: {ops}."
        if "axes" not in v.properties:
            text += f"  Dtypes: {', '.join(v.dtypes)}."
        text += f"  Rounding chain: {v.rounding}."
        lines.extend(textwrap.wrap(text, _WIDTH, initial_indent="- ", subsequent_indent="  ",
                                   break_on_hyphens=False))
    return "\n".join(lines)


# Parameter descriptions shared by every reduction and scan.
SHARED = {
    "a": ("A NumPy array (any layout or byte order) or anything ``numpy.asarray`` accepts, or a device array "
          "exporting DLPack or ``__cuda_array_interface__`` (CuPy, PyTorch, JAX, Numba, "
          "``gpureduce.DeviceArray``), read in place whatever its strides.  Dtypes: "
          f"{', '.join(DTYPE_NAMES)}."),
}
# Blocks of lines shared verbatim (numpydoc entries), each put where a line holds only %(name)s, at its indent.
BLOCKS = {
    "param_a": ("a : array_like or device array\n"
                "    %(a)s"),
    "raises_axis_cuda": ("numpy.exceptions.AxisError\n"
                         "    An axis out of range for ``a.ndim``.\n"
                         "gpureduce.CudaError\n"
                         "    No CUDA device or driver, or a CUDA call failed."),
    # reduce's and scan's, which name the likeliest CUDA failure
    "raises_axis_cuda_memory": ("numpy.exceptions.AxisError\n"
                                "    An axis out of range for ``a.ndim``.\n"
                                "gpureduce.CudaError\n"
                                "    No CUDA device or driver, or a CUDA call failed (for example out of memory)."),
    # the scans' ValueError entry and the two above
    "raises_scan": ("ValueError\n"
                    "    An unknown `variant` (the message lists the valid ones), or one not marked *axes* given "
                    "anything but\n"
                    "    what it scans (see Notes); `out` of the wrong shape, read-only, on another device, or not "
                    "contiguous\n"
                    "    where it must be; a device array that is not in device memory of the current device.\n"
                    "%(raises_axis_cuda)s"),
}
_PLACEHOLDER = re.compile(r"(\s*)%\((\w+)\)s")


def _fill_shared(lines):
    out = []
    for line in lines:
        m = _PLACEHOLDER.fullmatch(line)
        if m is None or (m.group(2) not in SHARED and m.group(2) not in BLOCKS):
            out.append(line)
            continue
        indent = m.group(1)
        if m.group(2) in BLOCKS:  # its own placeholders filled in too
            out.extend(_fill_shared([indent + text for text in BLOCKS[m.group(2)].splitlines()]))
            continue
        out.extend(textwrap.wrap(SHARED[m.group(2)], _WIDTH, initial_indent=indent, subsequent_indent=indent,
                                 break_on_hyphens=False))
    return out


def _section_start(lines, name):
    """Index of the line holding numpydoc section header `name` (underlined with dashes), or None."""
    for i in range(len(lines) - 1):
        if lines[i].strip() == name and set(lines[i + 1].strip()) == {"-"}:
            return i
    return None


def with_variants(doc: str, kind: str, op: str | None = None) -> str:
    """`doc` (a numpydoc docstring) with its shared descriptions filled in and the Variants paragraph at the end
    of its Notes section.

    The Notes section is made if missing; it goes before Examples (numpydoc's order), else at the end.
    """
    lines = _fill_shared(inspect.cleandoc(doc).splitlines())
    paragraph = variants_paragraph(kind, op).splitlines()
    examples = _section_start(lines, "Examples")
    end = examples if examples is not None else len(lines)
    while end > 0 and not lines[end - 1].strip():
        end -= 1
    if _section_start(lines[:end], "Notes") is None:
        paragraph = ["Notes", "-----", *paragraph]
    blank_after = end < len(lines) and not lines[end].strip()
    lines[end:end] = ["", *paragraph] + ([] if blank_after or examples is None else [""])
    return "\n".join(lines) + "\n"


def document_variants(kind: str, op: str | None = None, template: str | None = None, **words):
    """Decorator of every public reduction and scan: append the Variants paragraph of (`kind`, `op`) to the
    function's docstring, and give it the ``stream=`` keyword (gpureduce/_streams.py), described there too.

    A mirrored pair (min/max, argmin/argmax, cummin/cummax) writes its docstring once: `template`, a
    ``string.Template`` text whose ``${...}`` fields `words` fill in, stands for the function's own."""
    def decorate(func):
        doc = string.Template(template).substitute(words) if template is not None else func.__doc__
        if doc:  # None under python -OO
            func.__doc__ = with_variants(doc, kind, op)
        return takes_stream(func, kind, op)

    return decorate
