"""The documentation and typing of the public API, checked without a GPU.

* Every public function has a numpydoc docstring: Parameters naming exactly its parameters, in order, and
  Returns; the reductions and scans also Raises and Examples.  numpydoc parses them when it is installed
  (with its warnings as errors); a plain section reader does otherwise.
* ``help()`` of every reduction and scan lists the variants that implement it, as the registry says.
* ``gpureduce/_core.pyi`` names exactly what the compiled ``gpureduce._core`` exports, DeviceArray's
  members included, with the parameters and defaults of the C functions' signature lines.
* The examples run as doctests: those that need no device here, all of them on a GPU.
"""
import ast
import contextvars
import builtins
import doctest
import inspect
import pathlib
import pydoc
import re
import warnings

import pytest

import gpureduce
from gpureduce import _core, _registry

try:
    from numpydoc.docscrape import FunctionDoc
except ImportError:  # numpydoc is optional: the plain reader below checks the same sections
    FunctionDoc = None

PUBLIC_FUNCTIONS = sorted(name for name in gpureduce.__all__ if inspect.isfunction(getattr(gpureduce, name)))
# name -> (kind, operator) of the functions whose help lists variants; None: every operator of the kind.  From the
# operator table (cuda/abi/ops.def): every operator's function and its scan's, so a new one is checked (and its
# examples run on the GPU) without being listed here.
WITH_VARIANTS = {"reduce": ("reduce", None), "scan": ("scan", None),
                 **{op: ("reduce", op) for op in _registry.REDUCE_OPS},
                 **{function: ("scan", op) for function, op in _registry.SCAN_FUNCTIONS.items()}}
# examples that need no device
CPU_EXAMPLES = ("variants", "device_count", "segmented_variants")
# functions whose examples need a device, beyond the reductions and scans of WITH_VARIANTS
GPU_EXAMPLES = ("reduceat", "segmented_reduce", "groupby_reduce")

PACKAGE = pathlib.Path(gpureduce.__file__).parent
STUB = PACKAGE / "_core.pyi"


# ---------------------------------------------------------------- numpydoc docstrings

def sections(doc):
    """{section title: list of its lines} of a numpydoc docstring (title lines underlined with dashes)."""
    lines = inspect.cleandoc(doc).splitlines()
    found, current = {}, "Summary"
    found[current] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and lines[i].strip() and set(lines[i + 1].strip()) == {"-"} \
                and len(lines[i + 1].strip()) == len(lines[i].strip()):
            current = lines[i].strip()
            assert current not in found, f"section {current} twice"
            found[current] = []
            i += 2
            continue
        found[current].append(lines[i])
        i += 1
    return found


def documented_parameters(lines):
    """Names of the `name : type` entries of a Parameters section (several names may share one entry)."""
    names = []
    for line in lines:
        if line and not line[0].isspace():
            for name in line.split(" : ")[0].split(","):
                names.append(name.strip().lstrip("*"))
    return names


def signature_parameters(func):
    return [p.name for p in inspect.signature(func).parameters.values()]


@pytest.mark.parametrize("name", PUBLIC_FUNCTIONS)
def test_public_functions_have_numpydoc_docstrings(name):
    func = getattr(gpureduce, name)
    doc = func.__doc__
    assert doc, f"gpureduce.{name} has no docstring"
    found = sections(doc)
    params = signature_parameters(func)
    if params:
        assert "Parameters" in found, f"gpureduce.{name}: no Parameters section"
        assert documented_parameters(found["Parameters"]) == params, f"gpureduce.{name}: Parameters vs signature"
    assert "Returns" in found and any(line.strip() for line in found["Returns"]), f"gpureduce.{name}: no Returns"
    if name in WITH_VARIANTS:
        for section in ("Raises", "See Also", "Notes", "Examples"):
            assert section in found, f"gpureduce.{name}: no {section} section"
        raised = documented_parameters(found["Raises"])
        for exc in ("TypeError", "ValueError", "numpy.exceptions.AxisError", "gpureduce.CudaError"):
            assert exc in raised, f"gpureduce.{name}: Raises does not name {exc}"
    if FunctionDoc is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # an unknown or malformed section is a numpydoc warning
            parsed = FunctionDoc(func, role="func")
        if params:
            assert [p.name.lstrip("*") for p in parsed["Parameters"]] == params
        assert parsed["Returns"], f"gpureduce.{name}: numpydoc finds no Returns"
        if name in WITH_VARIANTS:
            assert parsed["Raises"] and parsed["Examples"]


# ---------------------------------------------------------------- the variants paragraph

def implementing(kind, op):
    """The variant names that implement `op` by the registry: the flat kernels' ops, and every operator for
    a variant flagged "axes" (the axis machinery); every variant of the kind when op is None."""
    names = [v.name for v in gpureduce.variants(kind=kind) if op is None or op in v.ops or "axes" in v.properties]
    if op in ("sum", "prod", "min", "max"):
        assert set(names) == {v.name for v in gpureduce.variants(kind=kind, op=op)}
    return names


@pytest.mark.parametrize("name", sorted(WITH_VARIANTS))
def test_help_lists_the_variants_from_the_registry(name):
    kind, op = WITH_VARIANTS[name]
    text = pydoc.render_doc(getattr(gpureduce, name), renderer=pydoc.plaintext)
    for section in ("Parameters", "Returns", "Raises", "Notes", "Examples"):
        assert f"{section}\n" in text, f"help(gpureduce.{name}) has no {section}"
    listed = re.findall(r"^\s*- ``(\w+)``", text, flags=re.MULTILINE)
    assert listed == implementing(kind, op), f"help(gpureduce.{name}) lists {listed}"
    default = [v.name for v in gpureduce.variants(kind=kind) if "default" in v.properties]
    for v in default:
        assert re.search(rf"- ``{v}`` \((\w+, )*default", text), f"{v} not marked as the default"


def test_help_of_sum_lists_every_sum_variant():
    text = pydoc.render_doc(gpureduce.sum, renderer=pydoc.plaintext)
    names = [v.name for v in gpureduce.variants(kind="reduce", op="sum")]
    assert names
    for v in gpureduce.variants(kind="reduce", op="sum"):
        assert f"``{v.name}``" in text
        assert v.doc.split()[0] in text  # its one-line doc comes along
    for v in gpureduce.variants(kind="reduce", op="sum"):
        marked = re.search(rf"- ``{v.name}`` \(([^)]*)\)", text)
        assert ("axes" in v.properties) == bool(marked and "axes" in marked.group(1))


# ---------------------------------------------------------------- py.typed and the _core stub

def test_py_typed_marker_and_stub_are_in_the_package():
    assert (PACKAGE / "py.typed").is_file()
    assert STUB.is_file()


def _stub():
    return ast.parse(STUB.read_text())


def _stub_names(body):
    names = {}
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                names[target.id] = node
    return names


def _public(names):
    return {n for n in names if not (n.startswith("__") and n.endswith("__"))}


def test_stub_names_exactly_what_the_extension_exports():
    stub = _stub_names(_stub().body)
    real = _public(dir(_core))
    assert set(stub) == real, f"missing from the stub: {sorted(real - set(stub))}; " \
                              f"not in _core: {sorted(set(stub) - real)}"


def test_stub_constants_have_their_runtime_types():
    for name, node in _stub_names(_stub().body).items():
        if not isinstance(node, ast.AnnAssign):
            continue
        value, annotation = getattr(_core, name), ast.unparse(node.annotation)
        if annotation == "Final[int]":
            assert type(value) is int, name
        elif annotation == "Final[tuple[str, ...]]":
            assert isinstance(value, tuple) and all(isinstance(s, str) for s in value), name
        elif annotation == "Final[dict[str, tuple[str, ...]]]":
            assert isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, tuple) and
                                                   all(isinstance(s, str) for s in v) for k, v in value.items()), name
        elif annotation == "Final[ContextVar[int | None]]":
            assert isinstance(value, contextvars.ContextVar), name
        elif annotation.startswith("Final[tuple[tuple[") and annotation.endswith("], ...]]"):  # rows of a table
            kinds = [{"str": str, "bool": bool, "int": int}[t.strip()]
                     for t in annotation[len("Final[tuple[tuple["):-len("], ...]]")].split(",")]
            assert isinstance(value, tuple), name
            assert all([type(f) for f in row] == kinds for row in value), name
        else:
            pytest.fail(f"{name}: no runtime check for the annotation {annotation}")


def test_stub_classes_have_the_runtime_bases():
    for name, node in _stub_names(_stub().body).items():
        if isinstance(node, ast.ClassDef):
            real = getattr(_core, name)
            for base in node.bases:
                named = ast.unparse(base)  # a builtin exception or a class of the module itself
                assert issubclass(real, getattr(builtins, named, None) or getattr(_core, named)), f"{name}({named})"


# what every type has, which a stub need not repeat
_TYPE_MACHINERY = {"__doc__", "__module__", "__new__", "__init__", "__repr__", "__dict__", "__weakref__"}


def test_stub_device_array_members_match_the_type():
    cls = _stub_names(_stub().body)["DeviceArray"]
    stub = set(_stub_names(cls.body))
    real = set(vars(_core.DeviceArray)) - _TYPE_MACHINERY
    assert stub - _TYPE_MACHINERY == real, f"missing from the stub: {sorted(real - stub)}; " \
                                           f"not on DeviceArray: {sorted(stub - real - _TYPE_MACHINERY)}"
    public = {n for n in dir(_core.DeviceArray) if not n.startswith("_")}
    assert public <= stub


def _c_signature(obj):
    """(parameter names, {name: default}) from the `name(params) -> ...` first line of a C docstring."""
    first = obj.__doc__.splitlines()[0]
    match = re.match(r"^(\w+)\((.*?)\)", first)
    assert match, f"no signature line in {first!r}"
    names, defaults = [], {}
    for part in filter(None, (p.strip() for p in match.group(2).split(","))):
        if part == "*":
            continue
        name, _, default = part.partition("=")
        names.append(name.strip())
        if default:
            defaults[name.strip()] = ast.literal_eval(default.strip())
    return names, defaults


def _stub_signature(node, method=False):
    args = node.args
    positional = args.posonlyargs + args.args
    names = [a.arg for a in positional + args.kwonlyargs]
    defaults = {a.arg: ast.literal_eval(d) for a, d in zip(positional[len(positional) - len(args.defaults):],
                                                             args.defaults)}
    defaults.update({a.arg: ast.literal_eval(d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None})
    if method:
        names = names[1:]
    return names, defaults


def test_stub_functions_have_the_c_signatures():
    for name, node in _stub_names(_stub().body).items():
        if isinstance(node, ast.FunctionDef):
            assert _stub_signature(node) == _c_signature(getattr(_core, name)), name


def test_stub_device_array_methods_have_the_c_signatures():
    cls = _stub_names(_stub().body)["DeviceArray"]
    for name, node in _stub_names(cls.body).items():
        member = vars(_core.DeviceArray).get(name)
        if not isinstance(node, ast.FunctionDef) or not callable(member) or name in _TYPE_MACHINERY:
            continue
        if not member.__doc__ or not member.__doc__.startswith(f"{name}("):
            continue  # slot wrappers (__len__) carry CPython's own docs
        assert _stub_signature(node, method=True) == _c_signature(member), f"DeviceArray.{name}"


# ---------------------------------------------------------------- the examples

def _run_examples(name):
    finder, runner = doctest.DocTestFinder(recurse=False), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = finder.find(getattr(gpureduce, name), f"gpureduce.{name}", globs={})
    assert tests and tests[0].examples, f"gpureduce.{name} has no examples"
    for test in tests:
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


@pytest.mark.parametrize("name", CPU_EXAMPLES)
def test_examples_that_need_no_device(name):
    _run_examples(name)


@pytest.mark.gpu
@pytest.mark.parametrize("name", sorted(WITH_VARIANTS) + list(GPU_EXAMPLES))
def test_examples_on_the_gpu(name):
    _run_examples(name)
