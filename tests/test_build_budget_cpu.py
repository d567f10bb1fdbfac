"""The build's budget (issue 37): every kernel instantiation is paid by every user at install, so what the build
compiles is counted and held to figures committed in cuda/build_budget.json.

setup.py writes gpureduce/_build_manifest.json beside the module it builds: the architectures, and per translation
unit the kernels ptxas compiled for each architecture and the nvcc step's time.  These tests read the manifest of
the gpureduce being tested (installed, or built in place) and fail when a build compiles more kernels for an
architecture than the budget allows, or when the module built for sm_75 alone (what CI builds) is larger than its
budget.  Raising the budget is a reviewed change: a new entry in the file's history with its reason.
"""
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BUDGET = ROOT / "cuda" / "build_budget.json"


def budget():
    return json.loads(BUDGET.read_text())


@pytest.fixture(scope="module")
def manifest():
    core = pytest.importorskip("gpureduce._core", reason="gpureduce is not built")
    path = Path(core.__file__).with_name("_build_manifest.json")
    assert path.exists(), (f"{core.__file__} was built without its manifest ({path.name}): build it again with this "
                           "setup.py (pip install . or python setup.py build_ext --inplace)")
    return json.loads(path.read_text())


def over_budget(manifest, limits):
    """What of `manifest` breaks `limits` (cuda/build_budget.json), as sentences; [] when nothing does."""
    said = []
    most = limits["kernels_per_architecture"]
    for arch, kernels in sorted(manifest["kernels"].items()):
        if kernels > most:
            heaviest = sorted(manifest["translation_units"].items(), key=lambda kv: -kv[1]["kernels"].get(arch, 0))[:5]
            units = ", ".join(f"{name} {unit['kernels'].get(arch, 0)}" for name, unit in heaviest)
            said.append(f"{kernels} kernels compiled for {arch}, over the budget of {most} (cuda/build_budget.json); "
                        f"the most: {units}")
    if manifest["archs"] == ["75"] and manifest["core_bytes"] > limits["core_bytes_sm75"]:
        said.append(f"_core is {manifest['core_bytes']} bytes built for sm_75, over the budget of "
                    f"{limits['core_bytes_sm75']} (cuda/build_budget.json)")
    return said


def test_the_build_stays_within_its_budget(manifest):
    assert manifest["kernels"], f"the manifest counts no kernel: {manifest}"
    said = over_budget(manifest, budget())
    assert not said, "; ".join(said) + ": make the new kernels cheaper, or raise the budget with its reason"


def test_one_kernel_more_breaks_the_budget(manifest):
    """The check bites: the same build with one kernel more per architecture (an operator or a dtype added without
    its budget), or a module one byte over, is refused."""
    limits = budget()
    grown = json.loads(json.dumps(manifest))
    for arch in grown["kernels"]:
        grown["kernels"][arch] = limits["kernels_per_architecture"] + 1
    assert over_budget(grown, limits)
    grown = dict(json.loads(json.dumps(manifest)), archs=["75"], core_bytes=limits["core_bytes_sm75"] + 1)
    assert any("bytes built for sm_75" in s for s in over_budget(grown, limits))


def test_the_manifest_names_every_cuda_file(manifest):
    """Every .cu file of cuda/ was compiled and counted, as a unit or in one of the variants' bundles (the units
    setup.py writes besides: the axis kernels from ops.def, the bundles)."""
    units = set(manifest["translation_units"])
    bundled = {m for unit in manifest["translation_units"].values() for m in unit.get("includes", ())}
    assert {"variants/reduce_shuffle.cu", "variants/scan_lookahead.cu"} <= bundled, sorted(units)
    missing = [str(p.relative_to(ROOT / "cuda")) for p in (ROOT / "cuda").rglob("*.cu")
               if str(p.relative_to(ROOT / "cuda")) not in units | bundled]
    assert not missing, f"not in the build manifest: {missing}"
    assert any(u.startswith("axis/reduce_segments_") for u in units), sorted(units)[:10]


def test_every_raise_of_the_budget_says_why():
    limits = budget()
    assert limits["history"], "cuda/build_budget.json has no history"
    for entry in limits["history"]:
        assert entry.get("reason", "").strip() and entry.get("date"), entry
    last = limits["history"][-1]
    assert (last["kernels_per_architecture"], last["core_bytes_sm75"]) == \
        (limits["kernels_per_architecture"], limits["core_bytes_sm75"]), "the budget is its history's last entry"
