"""Packaging checks that need no GPU: the sdist holds everything the build reads, and its metadata is right."""
import importlib.metadata
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What setup.py reads to build gpureduce._core (every file of cuda/ and src/: sources, headers, the .def
# lists), what pip reads to install it, and the tests a user runs from an unpacked sdist.
BUILD_INPUTS = ("cuda", "src", "gpureduce", "tests")
TOP_FILES = ("setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")
NOT_SOURCE = re.compile(r"(__pycache__|\.pyc$|\.so$|\.o$|\.egg-info)")


def _source_files():
    files = set(TOP_FILES)
    for folder in BUILD_INPUTS:
        for path in (ROOT / folder).rglob("*"):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and not NOT_SOURCE.search(rel):
                files.add(rel)
    return files


@pytest.fixture(scope="module")
def sdist(tmp_path_factory):
    pytest.importorskip("build", reason="the `build` package (in the test extra) makes the sdist")
    if not (ROOT / "setup.py").exists():
        pytest.skip("not a source tree")
    out = tmp_path_factory.mktemp("sdist")
    # --no-isolation: the test environment already has setuptools>=77 and numpy (the test extra); no download
    # run from elsewhere: in the root, `-m build` would import the build/ output folder instead of the package
    done = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(ROOT)],
                          capture_output=True, text=True, cwd=out)
    assert done.returncode == 0, done.stdout + done.stderr
    (archive,) = out.glob("gpureduce-*.tar.gz")
    return archive


def test_sdist_holds_every_file_the_build_reads(sdist):
    with tarfile.open(sdist) as tar:
        names = tar.getnames()
    top = names[0].split("/")[0]
    packed = {n[len(top) + 1:] for n in names if n.startswith(top + "/")}
    missing = sorted(_source_files() - packed)
    assert not missing, f"the sdist lacks files the build or the tests read: {missing}"
    for kind in (".cu", ".cuh", ".def", ".h", ".c"):
        assert any(n.endswith(kind) for n in packed), f"no {kind} file in the sdist"
    outputs = [n for n in packed if NOT_SOURCE.search(n) and not n.startswith("gpureduce.egg-info")]
    assert not outputs, f"build outputs in the sdist: {outputs}"


def test_sdist_metadata(sdist):
    with tarfile.open(sdist) as tar:
        info = next(m for m in tar.getmembers() if m.name.endswith("/PKG-INFO") and m.name.count("/") == 1)
        text = tar.extractfile(info).read().decode()
    from gpureduce._version import __version__

    assert f"Version: {__version__}" in text
    assert "License-Expression: MIT" in text
    assert "Requires-Python: >=3.10" in text
    assert "License-File: LICENSE" in text


def test_version_in_one_place():
    import gpureduce
    from gpureduce._version import __version__

    assert gpureduce.__version__ == __version__
    pyproject = (ROOT / "pyproject.toml").read_text()
    project = pyproject.split("[project]", 1)[1].split("\n[", 1)[0]
    assert re.search(r'^dynamic\s*=.*"version"', project, re.M), "pyproject.toml must read the version from gpureduce"
    assert re.search(r'^version\s*=', project, re.M) is None, "the version is written in pyproject.toml too"


def test_installed_metadata_matches_when_installed():
    try:
        dist = importlib.metadata.distribution("gpureduce")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("gpureduce is not installed (an in-place build)")
    import gpureduce

    assert dist.version == gpureduce.__version__
    assert any(ep.group == "pytest11" and ep.value == "gpureduce.pytest_plugin" for ep in dist.entry_points)
    files = {str(f) for f in dist.files or ()}
    assert "gpureduce/py.typed" in files and "gpureduce/_core.pyi" in files


def test_every_python_package_of_gpureduce_is_installed():
    """pyproject.toml lists the packages setuptools installs: every folder of gpureduce/ that holds Python modules
    is one of them, with its __init__.py (a folder left out would import from a clone and fail from a wheel)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gpureduce").rglob("*.py")
               if "__pycache__" not in p.parts}
    assert folders == listed, f"pyproject.toml's packages {sorted(listed)}; folders with modules {sorted(folders)}"
    missing = [f for f in folders if not (ROOT / f.replace(".", "/") / "__init__.py").exists()]
    assert not missing, f"packages without __init__.py: {missing}"
