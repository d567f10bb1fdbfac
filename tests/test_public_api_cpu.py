"""Every public function's signature and docstring, held against a snapshot (tests/data/public_api.json).

The Python package's redesign (issue 39: one operator record, one typed plan, the planning package, gpureduce.dask a
package) must leave what users read and call unchanged: ``help()`` of every public name of gpureduce,
gpureduce.dask and gpureduce.testing.  A deliberate change of the public face rewrites the snapshot in the same
commit:

    python tests/test_public_api_cpu.py --write
"""
import importlib
import inspect
import json
import sys
from pathlib import Path

import pytest

SNAPSHOT = Path(__file__).resolve().parent / "data" / "public_api.json"
MODULES = ("gpureduce", "gpureduce.dask", "gpureduce.testing")


def public_face(module_names=MODULES):
    """{"module.name": {"signature": ..., "doc": ...}} of every public function and class of the modules (the
    docstrings as inspect.cleandoc gives them: Python 3.13 strips their indentation itself)."""
    face = {}
    for module_name in module_names:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or [n for n in dir(module) if not n.startswith("_")]
        for name in sorted(names):
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj) or inspect.isbuiltin(obj)):
                continue
            try:
                signature = str(inspect.signature(obj))
            except (TypeError, ValueError):
                signature = None
            face[f"{module_name}.{name}"] = {"signature": signature,
                                             "doc": inspect.cleandoc(obj.__doc__) if obj.__doc__ else None}
    return face


@pytest.mark.parametrize("module_name", MODULES)
def test_the_public_face_is_unchanged(module_name):
    if module_name == "gpureduce.dask":
        pytest.importorskip("dask.array")
    if sys.flags.optimize >= 2:
        pytest.skip("python -OO drops docstrings")
    want = {k: v for k, v in json.loads(SNAPSHOT.read_text()).items() if k.rpartition(".")[0] == module_name}
    got = public_face([module_name])
    assert sorted(got) == sorted(want), f"public names added or gone: {sorted(set(got) ^ set(want))}"
    changed = [name for name in want if got[name] != want[name]]
    assert not changed, (f"signature or docstring changed: {changed} (a deliberate change rewrites the snapshot: "
                         "python tests/test_public_api_cpu.py --write)")


# the public functions that run no reduction or scan: what they take is not an array to work on
NO_DEVICE_WORK = {"variants", "segmented_variants", "device_count", "device_info", "benchmark", "register_torch_ops"}


def test_every_function_that_works_on_arrays_takes_stream():
    """Issue 38: an explicit stream= keyword on every public function (None: the input library's current
    stream), the segmented reductions included."""
    import gpureduce
    lacking = []
    for name in gpureduce.__all__:
        f = getattr(gpureduce, name)
        if not inspect.isfunction(f) or name in NO_DEVICE_WORK:
            continue
        p = inspect.signature(f).parameters.get("stream")
        if p is None or p.kind is not p.KEYWORD_ONLY or p.default is not None:
            lacking.append(name)
    assert not lacking, f"public functions without a keyword-only stream=None: {lacking}"


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    SNAPSHOT.write_text(json.dumps(public_face(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {SNAPSHOT}")
