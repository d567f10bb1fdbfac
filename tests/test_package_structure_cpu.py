"""The package's structure (issue 39): the import graph of gpureduce/ and the call graph between src/'s files have
no cycle, and no module reads another module's private (underscored) names.

Read from the files, not from an import: a cycle closed through a function-local import counts, as does a private
name taken through a module alias (``from . import dask as _dask; _dask._chunks(...)``).
"""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "gpureduce"


def module_name(path):
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}
EXTENSIONS = {"gpureduce._core"}  # modules that are not Python files: an import of one is an import of a module


def resolve(module, level, target):
    """The absolute name of a relative import's target seen from `module`."""
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for _ in range(level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{target}" if target else package


def imports(module):
    """[(imported module, [names taken from it], line)] of `module`, anywhere in it (function-local too)."""
    found = []
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = resolve(module, node.level, node.module) if node.level else node.module or ""
            if not base.startswith("gpureduce"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                if sub in MODULES or sub in EXTENSIONS:  # `from . import x`: the module x, not its package
                    found.append((sub, [], node.lineno))
                else:
                    found.append((base, [alias.name], node.lineno))
        elif isinstance(node, ast.Import):
            found += [(a.name, [], node.lineno) for a in node.names if a.name.startswith("gpureduce")]
    return found


def module_aliases(module):
    """{local name: module} of the gpureduce modules `module` binds to a name (``from . import dask as _dask``)."""
    aliases = {}
    tree = ast.parse(MODULES[module].read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = resolve(module, node.level, node.module) if node.level else node.module or ""
            for alias in node.names:
                if f"{base}.{alias.name}" in MODULES or f"{base}.{alias.name}" in EXTENSIONS:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
    return aliases


def is_private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def cycles(graph):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_python_import_graph_has_no_cycle():
    graph = {m: {target for target, _, _ in imports(m) if target in MODULES and target != m} for m in MODULES}
    # a package imports its modules and they may import their siblings: the package's own __init__ is not a
    # module they may import back
    assert not cycles(graph), f"import cycles in gpureduce/: {cycles(graph)}"


def test_no_module_takes_another_modules_private_names():
    taken = []
    for module in MODULES:
        for target, names, line in imports(module):
            if target == "gpureduce._core":
                continue  # the C extension: its underscored names are its Python face (there are none today)
            taken += [f"{module}:{line} imports {target}.{n}" for n in names if is_private(n)]
        aliases = module_aliases(module)
        for node in ast.walk(ast.parse(MODULES[module].read_text())):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases \
                    and aliases[node.value.id] != "gpureduce._core" and is_private(node.attr):
                taken.append(f"{module}:{node.lineno} reads {aliases[node.value.id]}.{node.attr}")
    assert not taken, "private names taken across modules:\n" + "\n".join(taken)


def test_the_c_extensions_files_call_each_other_without_a_cycle():
    """src/: which file's functions each file calls (a function is defined where its name starts a line)."""
    sources = {p.stem: p.read_text() for p in (ROOT / "src").glob("*.c")}
    defined = {name: stem for stem, text in sources.items()
               for name in re.findall(r"^(gr_\w+)\(", text, re.M)}
    graph = {stem: {defined[name] for name in re.findall(r"\b(gr_\w+)\s*\(", text)
                    if name in defined and defined[name] != stem}
             for stem, text in sources.items()}
    assert not cycles(graph), f"call cycles between src/ files: {cycles(graph)}"
