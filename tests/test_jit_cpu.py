"""Kernels compiled on first use (issue 37; src/jit.c): NVRTC, the disk cache and `python -m gpureduce warm`,
where no GPU is needed: NVRTC makes an architecture's cubin on any machine with the toolkit.

Each case runs in a fresh interpreter: the cache's folder and NVRTC are found once per process, from the
environment (GPUREDUCE_KERNEL_CACHE, GPUREDUCE_NVRTC, CUDA_HOME).
"""
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_core = pytest.importorskip("gpureduce._core", reason="gpureduce is not built")

ROOT = Path(__file__).resolve().parents[1]
HOT_SET = ROOT / "cuda" / "abi" / "hot_set.def"
MAGIC = b"gpureduce-jit 1 "


def _environment(cache, **env):
    """This process's gpureduce (its sys.path), the kernel cache in `cache`, and `env`."""
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "GPUREDUCE_KERNEL_CACHE": str(cache), **env}


def _run(code, cache, **env):
    """Run `code` in a fresh interpreter with the kernel cache in `cache`: (exit code, stdout + stderr)."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=_environment(cache, **env), cwd=str(cache))
    return done.returncode, done.stdout + done.stderr


def _nvrtc_found():
    return json.loads(_run("import json, gpureduce._core as c; print(json.dumps(c.jit_info()))",
                           Path("/tmp"))[1].splitlines()[-1])["nvrtc_found"]


needs_nvrtc = pytest.mark.skipif(not _nvrtc_found(), reason="no NVRTC on this machine (the CUDA toolkit's)")


def _hot_dtypes():
    codes = re.findall(r"^GR_HOT_DTYPE\(GR_(\w+)\)", HOT_SET.read_text(), re.M)
    return {code.lower() for code in codes}


COPY, REDUCE, SCAN, REDUCE_CUB, SCAN_CUB = 0, 1, 2, 3, 4  # cuda/abi/jit.h: gr_jit_program
SCANNING = set(re.findall(r"^GR_OP\(\s*\w+\s*,\s*(\w+)\s*,\s*YES", (ROOT / "cuda" / "abi" / "ops.def").read_text(), re.M))
_TYPE = r"gr::dtype_type<\(gr_dtype\)(\d+)>::type"
# the operators whose axis kernels are another's (ops.def's last column, `kernels`): they list none of their own
SHARING = {name.lower() for name, kernels in re.findall(r"^GR_OP\(\s*(\w+)\s*,.*,\s*(\w+)\s*\)\s*$",
                                                        (ROOT / "cuda" / "abi" / "ops.def").read_text(), re.M)
           if kernels != name}


def _listed(program):
    return [name for p, name in _core.jit_kernels() if p == program]


def test_the_hot_set_is_the_one_list():
    hot = _core.hot_set
    assert set(hot["dtypes"]) == _hot_dtypes()
    text = HOT_SET.read_text()
    assert set(hot["reduce"]) == {n.lower() for n in re.findall(r"^GR_HOT_REDUCE\((\w+)\)", text, re.M)}
    assert set(hot["scan"]) == {n.lower() for n in re.findall(r"^GR_HOT_SCAN\((\w+)\)", text, re.M)}
    assert {"sum", "mean", "min", "max", "argmin", "argmax", "var", "std"} <= set(hot["reduce"])
    assert "sum" in hot["scan"]
    lines = re.findall(r"^GR_HOT_CUB\((\w+), (\w+), GR_(\w+)\)", text, re.M)
    assert set(_core.cub_hot_set) == {(kind.lower(), op.lower(), dtype.lower()) for kind, op, dtype in lines}
    # what benchmarks/bench_axis.py measures against CUB
    assert {("reduce", "sum", "float32"), ("scan", "sum", "float32")} <= set(_core.cub_hot_set)


def test_the_casts_compiled_on_first_use_are_those_outside_the_hot_set():
    names = _core.dtype_names
    hot = _hot_dtypes()
    assert hot and hot <= set(names)
    pairs = set()
    for name in _listed(COPY):
        m = re.fullmatch(rf"gr::copy_strided_kernel<{_TYPE}, {_TYPE}>", name)
        assert m, name
        pairs.add((names[int(m[1])], names[int(m[2])]))
    want = {(a, b) for a in names for b in names if not (a in hot and b in hot)}
    assert pairs == want and len(_listed(COPY)) == len(want) == len(names) ** 2 - len(hot) ** 2


def _axis_calls(program, pattern):
    """{(operator, input, result)} of the listed axis kernels of `program`, read from their names."""
    ops, names = _core.op_names, _core.dtype_names
    calls = set()
    for name in _listed(program):
        if "scan_chunk_totals_kernel" in name:  # the chunk totals' kernel: (operator, result) only
            assert re.fullmatch(rf"gr::scan_chunk_totals_kernel<gr::op_functor<\(gr_op\)\d+>::type, "
                                rf"gr::accumulator<{_TYPE}>::type, (32|256)>", name), name
            continue
        m = re.search(pattern, name)
        assert m, name
        calls.add((ops[int(m[1])], names[int(m[2])], names[int(m[3])]))
    return calls


def test_the_axis_kernels_compiled_on_first_use_are_those_outside_the_hot_set():
    hot, ops = _core.hot_set, _core.op_names
    reduce = _axis_calls(REDUCE, rf"gr::reducer_alternative<\(gr_op\)(\d+), {_TYPE}, {_TYPE}, \d>::type")
    scan = _axis_calls(SCAN, rf"gr::op_functor<\(gr_op\)(\d+)>::type, {_TYPE}, {_TYPE}")
    # every operator has kernels there: those outside the hot set for every dtype they take, the hot ones for
    # dtypes outside it; std and nanstd run var's and nanvar's (ops.def's `kernels` column)
    assert {op for op, _, _ in reduce} == set(ops) - SHARING
    assert {op for op, _, _ in scan} == SCANNING
    assert {("prod", "float32", "float32"), ("nanvar", "float16", "float16"), ("any", "int8", "bool")} <= reduce
    # the hot operators on dtypes outside the hot set, and on dtype= other than NumPy's default result
    assert {("sum", "int8", "int64"), ("argmax", "uint64", "int64"), ("sum", "float32", "float64")} <= reduce
    # never a hot call: a hot operator, a hot dtype, NumPy's result dtype
    hot_calls = {("sum", "float32", "float32"), ("sum", "int32", "int64"), ("mean", "bool", "float64"),
                 ("var", "bfloat16", "bfloat16"), ("argmin", "float16", "int64"), ("max", "int64", "int64")}
    assert not hot_calls & reduce
    assert ("prod", "int8", "int64") in scan and ("sum", "uint16", "uint64") in scan
    assert not {("sum", "float32", "float32"), ("sum", "int32", "int64"), ("sum", "bool", "int64")} & scan
    kernels = _listed(REDUCE)
    assert len(kernels) == len(set(kernels))


def test_cubs_axis_reductions_compiled_on_first_use_are_those_outside_the_hot_set():
    """CUB's baseline (variant "cub") takes inputs already in the result type: its first-use kernels are CUB's
    own segmented reduction and the finishing kernel of every such call outside the hot set."""
    reducer = rf"gr::reducer_alternative<\(gr_op\)(\d+), {_TYPE}, {_TYPE}, \d>::type"
    names = _listed(REDUCE_CUB)
    assert names and len(names) == len(set(names))
    cub = [n for n in names if n.startswith("cub::detail::reduce::DeviceSegmentedReduceKernel<")]
    finish = [n for n in names if n.startswith("gr::finish_segments_kernel<")]
    assert len(cub) == len(finish) == len(names) // 2
    calls = _axis_calls(REDUCE_CUB, reducer)
    assert {op for op, _, _ in calls} == set(_core.op_names) - SHARING
    assert {("prod", "float32", "float32"), ("nanargmax", "float16", "int64"), ("sum", "int8", "int8")} <= calls
    # CUB's hot set is what the tables measure against it (hot_set.def: GR_HOT_CUB); the rest of gpureduce's hot
    # set is not CUB's
    assert ("sum", "float32", "float32") not in calls
    assert {("argmin", "float16", "int64"), ("max", "int64", "int64"), ("mean", "bfloat16", "bfloat16"),
            ("sum", "float64", "float64")} <= calls


def test_cubs_axis_scans_compiled_on_first_use_are_those_outside_the_hot_set():
    """CUB's scan-by-key (variant "cub" of the scans along an axis): its agent's kernel for every scanning call
    outside the hot set, and the init kernel of each accumulator, once."""
    names = _listed(SCAN_CUB)
    assert names and len(names) == len(set(names))
    scans = [n for n in names if n.startswith("gr::cub_scan_by_key_kernel<")]
    inits = [n for n in names if n.startswith("gr::cub_scan_by_key_init_kernel<")]
    assert len(scans) + len(inits) == len(names)
    for name in inits:
        assert re.fullmatch(rf"gr::cub_scan_by_key_init_kernel<gr::accumulator<{_TYPE}>::type>", name), name
    ops, dtypes = _core.op_names, _core.dtype_names
    calls = set()
    for name in scans:
        m = re.fullmatch(rf"gr::cub_scan_by_key_kernel<gr::op_functor<\(gr_op\)(\d+)>::type, {_TYPE}, {_TYPE}>", name)
        assert m, name
        calls.add((ops[int(m[1])], dtypes[int(m[2])], dtypes[int(m[3])]))
    assert len(calls) == len(scans)
    assert {op for op, _, _ in calls} == SCANNING
    assert {("prod", "float32", "float32"), ("nansum", "float64", "float64"), ("max", "int16", "int16"),
            ("sum", "int8", "int8")} <= calls
    # CUB's hot set is compiled ahead of time
    assert ("sum", "float32", "float32") not in calls
    assert {("sum", "int64", "int64"), ("sum", "bfloat16", "bfloat16")} <= calls


def JIT_H_PROGRAMS():
    """The `GR_JIT_<NAME> = <n>` lines of cuda/abi/jit.h's gr_jit_program enum."""

    text = (Path(__file__).resolve().parent.parent / "cuda" / "abi" / "jit.h").read_text()
    return re.findall(r"^\s*(GR_JIT_\w+\s*=\s*\d+)", text, re.M)


def _libcu_includes(header, seen):
    """The `#include <cuda/...>` and `<cub/...>` lines of cuda/`header` and of the cuda/ headers it includes."""
    if header in seen:
        return set()
    seen.add(header)
    text = (ROOT / "cuda" / header).read_text()
    found = set(re.findall(r'^\s*#\s*include\s+<((?:cuda|cub)/[^>]+)>', text, re.M))
    for included in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
        found |= _libcu_includes(included, seen)
    return found


def test_the_programs_without_cub_parse_no_libcu_header():
    """A first-use kernel's compile is mostly the parse of its program's headers: libcu++'s <cuda/std/type_traits>
    alone took 0.65 s of 0.9 (cuda/primitives/traits.cuh).  The programs that do not run CUB include no CCCL header
    (the standard ones NVRTC lacks are setup.py's cheap stand-ins); CUB's two bring libcu++ with CUB."""
    jit_h = (ROOT / "cuda" / "abi" / "jit.h").read_text()
    programs = re.findall(r"^\s*GR_JIT_(\w+)\s*=\s*\d+,\s*/\*\s*([\w/]+\.cuh)", jit_h, re.M)
    assert len(programs) == len(JIT_H_PROGRAMS())
    for name, header in programs:
        includes = _libcu_includes(header, set())
        if name.endswith("_CUB"):
            assert any(i.startswith("cub/") for i in includes), (name, includes)
        else:
            assert not includes, f"program {name} ({header}) includes {sorted(includes)}"


def test_every_program_has_first_use_kernels():
    import gpureduce._core as c
    assert sorted({program for program, _ in c.jit_kernels()}) == list(range(len(JIT_H_PROGRAMS())))


@needs_nvrtc
def test_one_kernel_of_each_program_compiles_for_sm_75(tmp_path):
    """The embedded sources compile with NVRTC: the first listed kernel of each program (a fraction of a second each;
    CUB's a few)."""
    rc, out = _run("""
        import gpureduce._core as c
        seen = {}
        for program, name in c.jit_kernels():
            seen.setdefault(program, name)
        for program, name in sorted(seen.items()):
            print(program, c.jit_compile(program, name, 75)[1])
    """, tmp_path)
    assert rc == 0, out
    programs = [line.split("=")[0].strip() for line in JIT_H_PROGRAMS()]
    assert out.split() == [w for i in range(len(programs)) for w in (str(i), "True")], out


@needs_nvrtc
def test_a_kernel_is_compiled_once_then_read_from_the_cache(tmp_path):
    code = """
        import gpureduce._core as c
        program, name = c.jit_kernels()[0]
        print(c.jit_compile(program, name, 75))
    """
    rc, first = _run(code, tmp_path)
    assert rc == 0 and "True" in first, first
    rc, second = _run(code, tmp_path)
    assert rc == 0 and "False" in second, second
    files = list(tmp_path.iterdir())
    assert len(files) == 1 and files[0].suffix == ".cubin" and str(files[0]) in first
    data = files[0].read_bytes()
    assert data.startswith(MAGIC) and b"\n" in data
    name, cubin = data[len(MAGIC):].split(b"\n", 1)
    assert name.startswith(b"_ZN2gr19copy_strided_kernel") and cubin[:4] == b"\x7fELF"  # a cubin is an ELF file


@needs_nvrtc
def test_another_architecture_is_another_entry(tmp_path):
    rc, out = _run("""
        import gpureduce._core as c
        program, name = c.jit_kernels()[0]
        a, b = c.jit_compile(program, name, 75), c.jit_compile(program, name, 90)
        assert a[0] != b[0] and a[1] and b[1], (a, b)
        print("ok")
    """, tmp_path)
    assert rc == 0 and "ok" in out, out
    assert len(list(tmp_path.glob("*.cubin"))) == 2


@needs_nvrtc
def test_processes_filling_the_cache_at_once_each_get_a_whole_entry(tmp_path):
    code = textwrap.dedent("""
        import gpureduce._core as c
        program, name = c.jit_kernels()[1]
        print(c.jit_compile(program, name, 75)[0])
    """)
    procs = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=_environment(tmp_path), cwd=str(tmp_path)) for _ in range(4)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len({out.strip() for out in outs}) == 1, outs
    assert [p.name for p in tmp_path.iterdir()] == [Path(outs[0].strip()).name]  # no file left half written
    assert Path(outs[0].strip()).read_bytes().startswith(MAGIC)


@needs_nvrtc
def test_a_process_that_compiles_then_dies_leaves_nothing_in_the_temporary_folder(tmp_path):
    """NVRTC's automatic precompiled headers (-pch) wrote 60-200 MB a program under $TMPDIR and removed them only
    at a normal exit: every killed process or multiprocessing child (os._exit) left them behind."""
    temporary, cache = tmp_path / "tmp", tmp_path / "cache"
    temporary.mkdir(), cache.mkdir()
    rc, out = _run("""
        import os, gpureduce._core as c
        program = c.jit_kernels()[0][0]
        for name in [n for p, n in c.jit_kernels() if p == program][:2]:  # the second is what a PCH would serve
            c.jit_compile(program, name, 75)
        os._exit(0)  # no atexit handlers, as a multiprocessing child or a killed process
    """, cache, TMPDIR=str(temporary))
    assert rc == 0, out
    assert list(temporary.iterdir()) == []


# compiles the first listed kernel for sm_75, printing the error it raises
COMPILE_ONE = """
        import gpureduce._core as c
        program, name = c.jit_kernels()[0]
        try:
            c.jit_compile(program, name, 75)
        except RuntimeError as e:
            print("raised:", e)
"""


def test_without_nvrtc_the_error_says_what_is_missing_and_what_to_do(tmp_path):
    rc, out = _run(COMPILE_ONE + "        print(c.jit_info()['nvrtc_found'])\n", tmp_path,
                   GPUREDUCE_NVRTC=str(tmp_path / "no" / "libnvrtc.so"))
    assert rc == 0, out
    said = out.split("raised:", 1)[1]
    assert "NVRTC" in said and "no/libnvrtc.so" in said and "python -m gpureduce warm" in said, out
    assert out.strip().endswith("False")
    assert not list(tmp_path.glob("*.cubin"))


@needs_nvrtc
def test_without_the_toolkit_headers_the_error_names_the_missing_header(tmp_path):
    info = json.loads(_run("import json, gpureduce._core as c; print(json.dumps(c.jit_info()))",
                           tmp_path)[1].splitlines()[-1])
    rc, out = _run(COMPILE_ONE, tmp_path, GPUREDUCE_NVRTC=info["nvrtc"], CUDA_HOME=str(tmp_path / "toolkit"))
    assert rc == 0 and "raised:" in out, out
    assert "toolkit" in out and "cuda_fp16.h" in out and "CUDA_HOME" in out, out


def test_jit_compile_refuses_a_bad_program_or_architecture():
    with pytest.raises(ValueError, match="no program"):
        _core.jit_compile(99, "x", 75)
    with pytest.raises(ValueError, match="not an architecture"):
        _core.jit_compile(0, "x", 7)


@needs_nvrtc
def test_warm_fills_the_cache_for_named_architectures(tmp_path):
    rc, out = _run("""
        import gpureduce._core as c
        from gpureduce import _jit
        kernels = c.jit_kernels()[:2]
        c.jit_kernels = lambda: kernels  # two of them: each a fraction of a second of NVRTC
        print(_jit.warm([75]))
        print(_jit.warm([75]))
    """, tmp_path)
    assert rc == 0, out
    first, second = (eval(line, {}) for line in out.strip().splitlines()[-2:])
    assert first["kernels"] == 2 and first["compiled"] == 2 and first["cache_dir"] == str(tmp_path)
    assert second["kernels"] == 2 and second["compiled"] == 0
    assert len(list(tmp_path.glob("*.cubin"))) == 2


@needs_nvrtc
def test_warm_in_parallel_leaves_nothing_in_the_temporary_folder(tmp_path):
    """warm's workers compile with NVRTC's precompiled headers, which a pool's worker (it ends with os._exit) would
    leave under $TMPDIR: warm gives them a folder of their own and removes it."""
    temporary, cache = tmp_path / "tmp", tmp_path / "cache"
    temporary.mkdir(), cache.mkdir()
    rc, out = _run("""
        import gpureduce._core as c
        from gpureduce import _jit
        program = c.jit_kernels()[0][0]
        kernels = [k for k in c.jit_kernels() if k[0] == program][:4]
        print(_jit.warm([75], jobs=2, kernels=kernels))
    """, cache, TMPDIR=str(temporary))
    assert rc == 0, out
    assert eval(out.strip().splitlines()[-1], {})["compiled"] == 4
    assert list(temporary.iterdir()) == []


def test_warm_command_line(tmp_path):
    env = _environment(tmp_path)
    bad = subprocess.run([sys.executable, "-m", "gpureduce", "warm", "--arch", "sm_x"], capture_output=True,
                         text=True, env=env, cwd=str(tmp_path))
    assert bad.returncode == 2 and "--arch" in bad.stderr
    if _core.device_count() == 0:
        for args in (["warm"], ["warm", "--all"], ["warm", "--all", "--jobs", "2"]):
            none = subprocess.run([sys.executable, "-m", "gpureduce", *args], capture_output=True, text=True,
                                  env=env, cwd=str(tmp_path))
            assert none.returncode == 3 and "--arch" in none.stderr, (args, none.stderr)
