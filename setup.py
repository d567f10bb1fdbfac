"""Build of gpureduce._core: the C extension (src/) linked with the CUDA kernels (cuda/).

setuptools does not know nvcc, so `BuildExtWithNvcc` compiles every .cu file into an object first
(in parallel, the slowest files first), hands the objects to the linker, and lets setuptools build the C
sources as usual.  Each nvcc step prints one progress line (`pip install -v .` shows them).

Which GPUs the machine code is for, first match wins:
  GPUREDUCE_CUDA_ARCHS  compute capabilities, e.g. "90" or "80;90" ("native" = the GPUs visible now);
  the GPUs visible now  (nvidia-smi), so a build on a GPU machine is for that GPU only, like -arch=native;
  DEFAULT_ARCHS         with no GPU visible: 75;80;90, which covers sm_75 through sm_90 (an sm_80 cubin
                        also runs on sm_86/sm_89); PTX for the highest one is embedded for newer GPUs.
Other environment:
  CUDA_HOME / CUDA_PATH where the toolkit is (else nvcc on PATH, else /usr/local/cuda).
  GPUREDUCE_BUILD_JOBS  parallel nvcc processes (default: the number of CPUs).
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
# cuda/ by layer: abi/ (the C ABI, gpureduce.h, and the one list variants.def), primitives/, variants/, axis/,
# bench/.  Every #include inside cuda/ is written relative to cuda/ ("primitives/warp.cuh"), so nvcc gets -I cuda.
CUDA_DIR = ROOT / "cuda"
CUDA_ABI_DIR = CUDA_DIR / "abi"  # the C extension's `#include "gpureduce.h"` (src/ext.h)
# The whole-array variants (cuda/variants/), a file per algorithm for the reader, compile as one translation unit
# per kind, written by setup.py: nvcc's fixed cost per unit (two preprocessings, cudafe++, the host compiler and
# cicc reading the same headers: about 3.4 s of 2 cores' time each) was a third of their time.  CUB's baselines
# stay units of their own (CUB's headers are most of their time, and they compile beside the bundles).
VARIANT_BUNDLES = {"variants_reduce": "reduce_", "variants_scan": "scan_"}  # unit -> the stems it includes


def bundle_members(prefix):
    """The cuda/variants/ files of bundle `prefix`, relative to cuda/."""
    return sorted(str(p.relative_to(CUDA_DIR)) for p in (CUDA_DIR / "variants").glob(f"{prefix}*.cu")
                  if "cub" not in p.stem)


BUNDLED = {f"cuda/{m}" for prefix in VARIANT_BUNDLES.values() for m in bundle_members(prefix)}
CUDA_SOURCES = sorted(str(p.relative_to(ROOT)) for p in CUDA_DIR.rglob("*.cu")
                      if str(p.relative_to(ROOT)) not in BUNDLED)
# The axis kernels, one translation unit per (family, operator) so they compile in parallel, are written from the
# one list of operators (cuda/abi/ops.def): every operator reduces, those whose `scans` column is YES scan too.
OPS_DEF = CUDA_ABI_DIR / "ops.def"
# Each family's units: a unit per hot operator of cuda/abi/hot_set.def (its kernels compile in parallel with the
# others'), and one unit of the other operators, which compiles their host half only: their kernels, gpureduce's
# and CUB's (its segmented reduction and its scan-by-key's agent, launched from gpureduce's host half), compile on
# first use.
AXIS_FAMILIES = (  # (file stem, header, macro, scans (else reduces))
    ("reduce_segments", "axis/reduce_segments.cuh", "GR_REDUCE_SEGMENTS_OP", False),
    ("reduce_segments_cub", "axis/reduce_segments_cub.cuh", "GR_REDUCE_SEGMENTS_CUB_OP", False),
    ("scan_segments", "axis/scan_segments.cuh", "GR_SCAN_SEGMENTS_OP", True),
    ("scan_segments_cub", "axis/scan_segments_cub.cuh", "GR_SCAN_SEGMENTS_CUB_OP", True),
)
HOT_SET_DEF = CUDA_ABI_DIR / "hot_set.def"
C_SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src").glob("*.c"))
# nvcc 13 no longer builds sm_70.  Machine code runs on every GPU of the same major version with an equal or
# higher minor, so 80 serves 86 and 89 too: three cubins instead of five.
DEFAULT_ARCHS = "75;80;90"
OLDEST_ARCH = 75


def find_cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    return Path("/usr/local/cuda")


def visible_gpu_archs():
    """Compute capabilities of the GPUs visible now (e.g. ["90"]), [] where there is none or no driver."""
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        done = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    archs = []
    for line in done.stdout.split():
        major, _, minor = line.strip().partition(".")
        if major.isdigit() and minor.isdigit():
            archs.append(str(max(int(major + minor), OLDEST_ARCH)))
    return archs


def chosen_archs():
    """The compute capabilities to build, and where the choice came from (printed by the build)."""
    env = os.environ.get("GPUREDUCE_CUDA_ARCHS", "").strip()
    if env and env != "native":
        archs, origin = env.replace(",", ";").split(";"), "GPUREDUCE_CUDA_ARCHS"
    else:
        archs, origin = visible_gpu_archs(), "the GPUs visible (nvidia-smi)"
        if not archs:
            if env == "native":
                raise SystemExit("GPUREDUCE_CUDA_ARCHS=native, but nvidia-smi shows no GPU")
            archs, origin = DEFAULT_ARCHS.split(";"), "the default list (no GPU visible)"
    archs = sorted({a.strip() for a in archs if a.strip()}, key=int)
    if not archs or not all(a.isdigit() for a in archs):
        raise SystemExit(f"GPUREDUCE_CUDA_ARCHS={env!r}: expected compute capabilities such as 90 or 80;90")
    return archs, origin


def arch_flags(archs):
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    flags.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")  # PTX for newer GPUs
    return flags


CUDA_HOME = find_cuda_home()
NVCC = CUDA_HOME / "bin" / "nvcc"


def hot_operators(kind, cub=False):
    """The NAMEs of cuda/abi/hot_set.def's GR_HOT_<kind>(NAME) lines (kind REDUCE or SCAN), or with `cub` of its
    GR_HOT_CUB(<kind>, NAME, dtype) lines (CUB's baselines compiled ahead of time)."""
    text = HOT_SET_DEF.read_text()
    if cub:
        return set(re.findall(rf"^GR_HOT_CUB\(\s*{kind}\s*,\s*(\w+)\s*,", text, re.M))
    return set(re.findall(rf"^GR_HOT_{kind}\(\s*(\w+)\s*\)", text, re.M))


def operators():
    """(NAME, scans) of each GR_OP(NAME, name, scans, ..., kernels) line of cuda/abi/ops.def whose axis kernels are
    its own (its `kernels` column is NAME: std runs var's, so it has no unit), in order."""
    rows = re.findall(r"^GR_OP\(\s*(\w+)\s*,\s*\w+\s*,\s*(YES|NO)\s*,.*,\s*(\w+)\s*\)\s*$", OPS_DEF.read_text(), re.M)
    if not rows:
        raise SystemExit(f"no GR_OP(...) line found in {OPS_DEF}")
    return [(name, scans == "YES") for name, scans, kernels in rows if kernels == name]


# What each nvcc step leaves beside its object, for the next build and for the budget (cuda/build_budget.json):
#   <object>.d        the files it read (nvcc -MD): the object is rebuilt when one of them is newer, so a header
#                     edit recompiles only the translation units that include it
#   <object>.json     the kernels it compiled per architecture (ptxas -v names each entry function) and its time
def read_dependencies(dep_file):
    """The paths a make-style dependency file lists after its target ("obj.o : a.cu b.h \\ ..."); None if absent."""
    try:
        text = dep_file.read_text()
    except OSError:
        return None
    _, _, listed = text.replace("\\\n", " ").partition(":")
    return [Path(p) for p in listed.split()]


def up_to_date(obj, src_path):
    """Whether `obj` is newer than its source and every file its dependency file lists (and has its record)."""
    deps = read_dependencies(obj.with_suffix(".d"))
    if deps is None or not obj.exists() or not obj.with_suffix(".json").exists():
        return False
    built = obj.stat().st_mtime
    try:
        return all(p.stat().st_mtime < built for p in [src_path, *deps])
    except OSError:  # a header it read is gone
        return False


ENTRY = re.compile(r"Compiling entry function '[^']+' for '(sm_\d+a?)'")


def kernels_compiled(ptxas_log):
    """{architecture: kernels} from ptxas -v's report of an nvcc step."""
    counts = {}
    for arch in ENTRY.findall(ptxas_log):
        counts[arch] = counts.get(arch, 0) + 1
    return counts


def write_axis_sources(folder):
    """The axis kernels' translation units, in `folder`/axis/ (rewritten only when their text changes, so that
    the object cache keeps them); their paths."""
    (folder / "axis").mkdir(parents=True, exist_ok=True)
    paths = []
    for stem, header, macro, scan_family in AXIS_FAMILIES:
        hot = hot_operators("SCAN" if scan_family else "REDUCE", cub="cub" in stem)
        names = [name for name, scans in operators() if scans or not scan_family]
        units = [(name.lower(), [name]) for name in names if name in hot]
        tail = [name for name in names if name not in hot]
        if tail:
            units.append(("others", tail))
        for unit, members in units:
            path = folder / "axis" / f"{stem}_{unit}.cu"
            what = f"operator {members[0].lower()}" if len(members) == 1 else \
                f"operators {', '.join(m.lower() for m in members)}"
            text = (f"// {path.name} -- written by setup.py from cuda/abi/ops.def and hot_set.def: "
                    f"{stem.replace('_', ' ')} of {what} (see {header}).\n#include \"{header}\"\n\n"
                    + "".join(f"{macro}({m})\n" for m in members))
            if not path.exists() or path.read_text() != text:
                path.write_text(text)
            paths.append(str(path))
    return paths


def write_variant_bundles(folder):
    """The whole-array variants' translation units (VARIANT_BUNDLES), in `folder`/variants/ (rewritten only when
    their text changes); their paths.  nvcc -MD lists the files each includes, so an edit rebuilds its bundle."""
    (folder / "variants").mkdir(parents=True, exist_ok=True)
    paths = []
    for unit, prefix in VARIANT_BUNDLES.items():
        path = folder / "variants" / f"{unit}.cu"
        text = (f"// {path.name} -- written by setup.py (VARIANT_BUNDLES): the whole-array variants cuda/variants/"
                f"{prefix}*.cu, CUB's aside, as one translation unit.\n"
                + "".join(f'#include "{m}"\n' for m in bundle_members(prefix)))
        if not path.exists() or path.read_text() != text:
            path.write_text(text)
        paths.append(str(path))
    return paths


# Kernels compiled on first use (src/jit.c): the programs of cuda/abi/jit.h's gr_jit_program enum, each the text of
# one device header, and the cuda/ headers they include, embedded in the module so that NVRTC needs only the
# toolkit's own headers at run time.  NVRTC has no C library: the few standard headers the cuda/ headers include
# are given as their cuda/std equivalents.
JIT_H = CUDA_ABI_DIR / "jit.h"
JIT_STANDARD_HEADERS = {
    "cstdint": "#include <cuda/std/cstdint>\n",
    "stdint.h": "#include <cuda/std/cstdint>\n",
    "cstring": "#include <cuda/std/cstddef>\n",
    "stddef.h": "#include <cuda/std/cstddef>\n",
    "climits": "#include <cuda/std/climits>\n",
}
# the fixed-width names at global scope, as <stdint.h> gives them to the host compiler
JIT_STANDARD_HEADERS["stdint.h"] += "".join(
    f"using cuda::std::{t};\n" for t in ("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
                                         "uint32_t", "uint64_t", "intptr_t", "uintptr_t"))
JIT_STANDARD_HEADERS["cstdint"] = JIT_STANDARD_HEADERS["stdint.h"]
JIT_STANDARD_HEADERS["stddef.h"] += "using cuda::std::size_t;\nusing cuda::std::ptrdiff_t;\n"


def jit_programs():
    """(code name, header) of each program, in the order of the gr_jit_program enum of cuda/abi/jit.h."""
    return re.findall(r"^\s*GR_JIT_(\w+)\s*=\s*\d+,\s*/\*\s*([\w/]+\.cuh)", JIT_H.read_text(), re.M)


def jit_headers(programs):
    """The cuda/ headers the programs include, each once, from their `#include "..."` lines."""
    found, todo = {}, [header for _, header in programs]
    while todo:
        name = todo.pop()
        if name in found:
            continue
        found[name] = (CUDA_DIR / name).read_text()
        todo += re.findall(r'^\s*#\s*include\s+"([^"]+)"', found[name], re.M)
    return dict(sorted(found.items()))


def without_comments(source):
    """C++ `source` with its comments removed (a block comment's newlines kept, so NVRTC's line numbers stay the
    file's) and trailing blanks dropped: what the module embeds for NVRTC, a third smaller than the commented text.
    String and character literals are copied as they are (the cuda/ headers use no digit separators)."""
    out, i, n = [], 0, len(source)
    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("\n" * source.count("\n", i, end))
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and source[j] != c:
                j += 2 if source[j] == "\\" else 1
            out.append(source[i:j + 1])
            i = j + 1
        else:
            j = i
            while j < n and source[j] not in "/\"'":
                j += 1
            if j == i:  # a lone slash: division
                j += 1
            out.append(source[i:j])
            i = j
    return "\n".join(line.rstrip() for line in "".join(out).split("\n"))


def c_string(text):
    """`text` as a C string literal, a line per line."""
    lines = text.splitlines(keepends=True) or [""]
    escaped = (line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
               for line in lines)
    return "\n    ".join(f'"{line}"' for line in escaped)


def write_jit_sources(folder):
    """jit_sources.h in `folder` (rewritten only when its text changes): what src/jit.c compiles on first use."""
    programs = jit_programs()
    headers = {**{name: without_comments(text) for name, text in jit_headers(programs).items()}, **JIT_STANDARD_HEADERS}
    names = ", ".join(c_string(name) for name in headers)
    texts = ",\n    ".join(c_string(text) for text in headers.values())
    sources = ", ".join(c_string(f'#include "{header}"\n') for _, header in programs)
    program_names = ", ".join(c_string(f"{name.lower()}.cu") for name, _ in programs)
    text = (f"/* jit_sources.h -- written by setup.py from cuda/abi/jit.h and the cuda/ headers its programs include:\n"
            f" * what src/jit.c compiles on first use. */\n"
            f'#define GR_JIT_CUDA_HOME "{CUDA_HOME}"\n'
            f"#define GR_JIT_HEADER_COUNT {len(headers)}\n"
            f"static const char *const gr_jit_program_sources[GR_JIT_PROGRAM_COUNT] = {{{sources}}};\n"
            f"static const char *const gr_jit_program_names[GR_JIT_PROGRAM_COUNT] = {{{program_names}}};\n"
            f"static const char *const gr_jit_header_names[GR_JIT_HEADER_COUNT] = {{{names}}};\n"
            f"static const char *const gr_jit_header_texts[GR_JIT_HEADER_COUNT] = {{\n    {texts}}};\n")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "jit_sources.h"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    return path


MANIFEST_NAME = "_build_manifest.json"


def build_manifest(archs, nvcc_version, records):
    """What the build compiled: the architectures, the kernels per architecture in all and per translation unit,
    and each unit's nvcc time (when it was last compiled)."""
    totals = {}
    for record in records.values():
        for arch, n in record["kernels"].items():
            totals[arch] = totals.get(arch, 0) + n
    return {"archs": archs, "nvcc": nvcc_version.strip().splitlines()[-1] if nvcc_version.strip() else "",
            "kernels": totals, "translation_units": dict(sorted(records.items()))}


class BuildExtWithNvcc(build_ext):
    def build_extension(self, ext):
        cu = [s for s in ext.sources if s.endswith(".cu")]
        ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
        generated = Path(self.build_temp).resolve() / "generated"
        cu += write_variant_bundles(generated) + write_axis_sources(generated)
        # src/jit.c's programs: a rebuilt jit.c when a header it embeds changes
        jit_sources = write_jit_sources(generated)
        ext.include_dirs = list(ext.include_dirs) + [str(generated)]
        ext.depends = list(ext.depends or []) + [str(jit_sources)]
        objects = self.compile_cuda(cu)
        ext.extra_objects = list(ext.extra_objects or []) + objects
        # build_ext relinks only when a C source or a `depends` entry is newer than the module: without the CUDA
        # objects here, a rebuilt kernel would never reach the .so of an in-place build
        ext.depends = ext.depends + objects
        super().build_extension(ext)
        # beside the module, in the wheel and in an in-place build alike: what tests/test_build_budget_cpu.py reads
        module = Path(self.get_ext_fullpath(ext.name))
        self.manifest["core_bytes"] = module.stat().st_size
        (module.parent / MANIFEST_NAME).write_text(json.dumps(self.manifest, indent=1, sort_keys=True) + "\n")

    def copy_extensions_to_source(self):
        """An in-place build (setuptools builds into build/ and copies the module into the package): the manifest
        goes along, beside the module the tests import."""
        super().copy_extensions_to_source()
        build_py = self.get_finalized_command("build_py")
        for ext in self.extensions:
            inplace, built = (Path(p) for p in self._get_inplace_equivalent(build_py, ext))
            if (built.parent / MANIFEST_NAME).exists():
                shutil.copyfile(built.parent / MANIFEST_NAME, inplace.parent / MANIFEST_NAME)

    def compile_cuda(self, sources):
        if not NVCC.exists():
            raise SystemExit(f"nvcc not found at {NVCC}: install the CUDA toolkit or set CUDA_HOME to it")
        archs, origin = chosen_archs()
        # Hidden visibility: CUB's template statics would otherwise be exported as STB_GNU_UNIQUE symbols,
        # which bind process-wide even under RTLD_LOCAL and collide with CuPy's own CUB (a segfault on
        # `import cupy` after gpureduce).  Only PyInit__core is exported.  -compress-all: the machine code is
        # compressed too, not only the PTX (a quarter of the size; --compress-mode=size is a fifth smaller still
        # but its compressor takes a seventh of the whole build).
        # nvcc's -O sets the host compiler's level only: device code is always optimised (cicc and ptxas default
        # to -O3).  The host half of a .cu file is launch and dispatch code, and -O1 halves gcc's time on it.
        flags = ["-std=c++17", "-O1", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-I", str(CUDA_DIR),
                 "-Xfatbin=-compress-all", *arch_flags(archs)]
        # The object cache is keyed by the flags: another arch list or compiler builds into another folder.
        version = subprocess.run([str(NVCC), "--version"], capture_output=True, text=True).stdout
        key = hashlib.sha1(" ".join([str(NVCC), version, *flags]).encode()).hexdigest()[:12]
        out_dir = Path(self.build_temp) / f"cuda-{key}"
        out_dir.mkdir(parents=True, exist_ok=True)
        jobs = max(1, int(os.environ.get("GPUREDUCE_BUILD_JOBS", os.cpu_count() or 1)))
        print(f"gpureduce: nvcc for sm_{', sm_'.join(archs)} (+ PTX compute_{archs[-1]}), chosen by {origin}; "
              f"{len(sources)} CUDA files, {jobs} at a time", flush=True)
        # The heaviest files first, so the parallel jobs finish together instead of one long file starting last:
        # the variants' bundles, CUB's units (its headers alone are seconds of nvcc), the axis units (the hot set's
        # kernels), then the rest.
        def weight(s):
            stem, axis = Path(s).stem, Path(s).parent.name == "axis"
            return 3 if stem in VARIANT_BUNDLES else 2 if "cub" in stem else 1 if axis else 0
        order = sorted(sources, key=weight, reverse=True)
        done_count = [0]
        records = {}  # translation unit -> its record (kernels per architecture, seconds)
        started = time.monotonic()

        def compile_one(src):
            src_path = ROOT / src  # a path relative to the root, or a written one (absolute)
            rel = src_path.relative_to(CUDA_DIR if src_path.is_relative_to(CUDA_DIR) else src_path.parent.parent)
            obj = out_dir / rel.with_suffix(".o")  # cuda/axis/x.cu -> <out_dir>/axis/x.o: one folder per layer
            obj.parent.mkdir(parents=True, exist_ok=True)
            cached = up_to_date(obj, src_path) and not self.force
            t0 = time.monotonic()
            if not cached:
                # -MD and ptxas -v change nothing in the object: outside the flags that key the cache
                cmd = [str(NVCC), *flags, "-Xptxas=-v", "-MD", "-MF", str(obj.with_suffix(".d")), "-c", str(src_path),
                       "-o", str(obj)]
                run = subprocess.run(cmd, capture_output=True, text=True)
                if run.returncode != 0:
                    raise RuntimeError(f"nvcc failed on {src}:\n{' '.join(cmd)}\n{run.stdout}{run.stderr}")
                record = {"kernels": kernels_compiled(run.stdout + run.stderr),
                          "seconds": round(time.monotonic() - t0, 1)}
                if src_path.stem in VARIANT_BUNDLES:  # the cuda/ files it compiles
                    record["includes"] = bundle_members(VARIANT_BUNDLES[src_path.stem])
                obj.with_suffix(".json").write_text(json.dumps(record))
            records[str(rel)] = json.loads(obj.with_suffix(".json").read_text())
            done_count[0] += 1
            how = "cached" if cached and not self.force else f"{time.monotonic() - t0:5.1f} s"
            shown = src if not Path(src).is_absolute() else f"{rel} (written by setup.py)"
            print(f"gpureduce: [{done_count[0]:2}/{len(sources)}] {shown} ({how})", flush=True)
            return str(obj)

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            objects = dict(zip(order, pool.map(compile_one, order)))
        print(f"gpureduce: CUDA compiled in {time.monotonic() - started:.0f} s", flush=True)
        self.manifest = build_manifest(archs, version, records)
        return [objects[s] for s in sources]


cuda_lib = CUDA_HOME / ("lib64" if (CUDA_HOME / "lib64").exists() else "lib")

core = Extension(
    "gpureduce._core",
    sources=C_SOURCES + CUDA_SOURCES,
    include_dirs=[numpy.get_include(), str(CUDA_HOME / "include"), str(CUDA_ABI_DIR), str(CUDA_DIR),
                  str(ROOT / "src")],
    library_dirs=[str(cuda_lib)],
    # cudart is linked statically: the wheel needs the driver only.  The .cu objects need the C++ runtime.
    libraries=["cudart_static", "stdc++", "dl", "rt", "pthread"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    # -s: no symbol tables in the shipped .so (it exports PyInit__core only).
    extra_link_args=["-Wl,--exclude-libs,ALL", "-s"],
    extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core], cmdclass={"build_ext": BuildExtWithNvcc})
