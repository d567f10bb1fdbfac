"""Find the compiled extension when the source folder shadows the installed package.

`python -m gpureduce` (and `python -c "import gpureduce"`) run from a clone's root put the current directory
first on sys.path, so Python imports the source folder `gpureduce/`, which holds no compiled `_core`, instead
of the package `pip install .` put into site-packages.  Then the installed package's folder goes first on
this package's `__path__`: every submodule, `_core` and `__main__` included, is imported from the install,
and the source folder serves only this package's `__init__`.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys

_CORE_SUFFIXES = tuple(importlib.machinery.EXTENSION_SUFFIXES)


def _has_core(folder: str) -> bool:
    try:
        return any(name.startswith("_core") and name.endswith(_CORE_SUFFIXES) for name in os.listdir(folder))
    except OSError:
        return False


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def use_installed_core(package_path: list) -> None:
    here = package_path[0]
    if _has_core(here):
        return  # an installed package, or a source tree built in place
    parent = os.path.dirname(here)
    others = [p for p in sys.path if not _same(p or os.curdir, parent)]
    spec = importlib.machinery.PathFinder.find_spec(__package__, others)
    for folder in (spec.submodule_search_locations or []) if spec else []:
        if _has_core(folder) and not _same(folder, here):
            package_path.insert(0, folder)
            return
    raise ImportError(
        f"gpureduce's compiled extension (gpureduce._core) is not in {here} and no installed gpureduce was found. "
        "Install it with `pip install .` from the clone's root (this needs the CUDA toolkit's nvcc), or build it "
        "in place with `python setup.py build_ext --inplace`.", name="gpureduce._core")
