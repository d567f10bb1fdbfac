"""Build of gpureduce._core: the C extension (src/) linked with the CUDA kernels (cuda/).

setuptools does not know nvcc, so `BuildExtWithNvcc` compiles every .cu file into an object first
(in parallel), hands the objects to the linker, and lets setuptools build the C sources as usual.

Environment:
  GPUREDUCE_CUDA_ARCHS  compute capabilities to build machine code for, e.g. "90" or "80;90"
                        (default 75;80;90: an sm_80 cubin also runs on sm_86/sm_89, same major
                        version); PTX for the highest one is embedded too, for newer GPUs.
  CUDA_HOME / CUDA_PATH where the toolkit is (else nvcc on PATH, else /usr/local/cuda).
  GPUREDUCE_BUILD_JOBS  parallel nvcc processes (default: the number of CPUs).
"""
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent
CUDA_SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "cuda").glob("*.cu"))
C_SOURCES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "src").glob("*.c"))
# nvcc 13 no longer builds sm_70.  Machine code runs on every GPU of the same major version with an equal or
# higher minor, so 80 serves 86 and 89 too: three cubins instead of five halve the build on small machines.
DEFAULT_ARCHS = "75;80;90"


def find_cuda_home():
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(var):
            return Path(os.environ[var])
    nvcc = shutil.which("nvcc")
    if nvcc:
        return Path(nvcc).resolve().parent.parent
    return Path("/usr/local/cuda")


def arch_flags():
    archs = [a.strip() for a in os.environ.get("GPUREDUCE_CUDA_ARCHS", DEFAULT_ARCHS).replace(",", ";").split(";")]
    archs = sorted({a for a in archs if a}, key=int)
    if not archs:
        raise SystemExit("GPUREDUCE_CUDA_ARCHS is empty")
    flags = [f"-gencode=arch=compute_{a},code=sm_{a}" for a in archs]
    flags.append(f"-gencode=arch=compute_{archs[-1]},code=compute_{archs[-1]}")  # PTX for newer GPUs
    return flags


CUDA_HOME = find_cuda_home()
NVCC = CUDA_HOME / "bin" / "nvcc"


class BuildExtWithNvcc(build_ext):
    def build_extension(self, ext):
        cu = [s for s in ext.sources if s.endswith(".cu")]
        ext.sources = [s for s in ext.sources if not s.endswith(".cu")]
        ext.extra_objects = list(ext.extra_objects or []) + self.compile_cuda(cu)
        super().build_extension(ext)

    def compile_cuda(self, sources):
        if not NVCC.exists():
            raise SystemExit(f"nvcc not found at {NVCC}: set CUDA_HOME to the CUDA toolkit")
        out_dir = Path(self.build_temp) / "cuda"
        out_dir.mkdir(parents=True, exist_ok=True)
        headers = [p for p in (ROOT / "cuda").iterdir() if p.suffix in (".h", ".cuh", ".def")]
        newest_header = max((p.stat().st_mtime for p in headers), default=0)
        # Hidden visibility: CUB's template statics would otherwise be exported as STB_GNU_UNIQUE symbols,
        # which bind process-wide even under RTLD_LOCAL and collide with CuPy's own CUB (a segfault on
        # `import cupy` after gpureduce).  Only PyInit__core is exported.
        flags = ["-std=c++17", "-O3", "-Xcompiler", "-fPIC,-fvisibility=hidden", "-I", str(ROOT / "cuda"), *arch_flags()]

        def compile_one(src):
            obj = out_dir / (Path(src).stem + ".o")
            src_path = ROOT / src
            if obj.exists() and obj.stat().st_mtime > max(src_path.stat().st_mtime, newest_header) and not self.force:
                return str(obj)
            cmd = [str(NVCC), *flags, "-c", str(src_path), "-o", str(obj)]
            print(" ".join(cmd), flush=True)
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"nvcc failed on {src}:\n{done.stdout}{done.stderr}")
            return str(obj)

        jobs = int(os.environ.get("GPUREDUCE_BUILD_JOBS", os.cpu_count() or 1))
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            return list(pool.map(compile_one, sources))


cuda_lib = CUDA_HOME / ("lib64" if (CUDA_HOME / "lib64").exists() else "lib")

core = Extension(
    "gpureduce._core",
    sources=C_SOURCES + CUDA_SOURCES,
    include_dirs=[numpy.get_include(), str(CUDA_HOME / "include"), str(ROOT / "cuda"), str(ROOT / "src")],
    library_dirs=[str(cuda_lib)],
    # cudart is linked statically: the wheel needs the driver only.  The .cu objects need the C++ runtime.
    libraries=["cudart_static", "stdc++", "dl", "rt", "pthread"],
    define_macros=[("NPY_NO_DEPRECATED_API", "NPY_2_0_API_VERSION")],
    extra_link_args=["-Wl,--exclude-libs,ALL"],
    extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers"],
)

setup(ext_modules=[core], cmdclass={"build_ext": BuildExtWithNvcc})
