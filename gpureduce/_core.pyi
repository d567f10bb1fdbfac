"""Type stub of gpureduce._core, the C extension (src/): its method table (src/module.c), the constants its
exec slot adds, CudaError (src/errors.c), the Operand type (src/operand.c) and the DeviceArray type
(src/device_array.c).

The entry points take the codes gpureduce/_registry.py reads from this module (variant index, ``op_names``
index, ``dtype_names`` index, ``KIND_*``); gpureduce's public functions are the documented way in.
Functions declared with ``/`` are positional-only in C (METH_FASTCALL, METH_VARARGS, METH_O, METH_NOARGS).
"""
from contextvars import ContextVar
from typing import Any, Callable, Final, Literal, final

import numpy as np
from numpy.typing import DTypeLike, NDArray
from typing_extensions import CapsuleType

# ---- constants (core_exec in src/module.c) ----
KIND_REDUCE: Final[int]
KIND_SCAN: Final[int]
KIND_COPY: Final[int]
LAUNCH_FLAT: Final[int]  # a Plan's launcher (src/plan.c): the variant's whole-array kernel,
LAUNCH_AXIS: Final[int]  # the axis kernels,
LAUNCH_COPY: Final[int]  # a strided copy
SEGMENT_FIELDS: Final[tuple[str, ...]]  # the order of a reduction's or scan's layout: c0, c1, is0, ..., R
call_stream: Final[ContextVar[int | None]]  # a call's stream= as an int handle (gpureduce/_streams.py)
STREAM_CHUNK_BYTES: Final[int]  # a host input streams in chunks of at most this many bytes ...
STREAM_FROM_BYTES: Final[int]  # ... when it has more bytes than this (src/stream_host.c)
STREAM_TAIL_PIECES: Final[int]  # a row longer than a chunk ends in this many smaller pieces
PROP_DETERMINISTIC: Final[int]
PROP_BASELINE: Final[int]
PROP_DEFAULT: Final[int]
PROP_BLOCK_LOCAL: Final[int]
PROP_AXES: Final[int]
PROP_EXACT: Final[int]
OPS_EXACT_KERNEL: Final[int]  # the operators (bits of their codes) variant "exact" rounds with its own kernel
op_names: Final[tuple[str, ...]]
"""Operator names indexed by gr_op code: ("sum", "prod", "min", "max", "mean", "argmin", "argmax")."""
op_table: Final[tuple[tuple[str, bool, bool, str, str, str, str, bool, str, bool, str, str, str], ...]]
"""Per gr_op code (cuda/abi/ops.def): (name, scans, flat, result rule "SUM", "SAME", "MEAN", "INDEX", "BOOL",
"COUNT", "VAR", "LOG" or "NORM", the operator that serves integer and bool inputs, the arrays it reads: "ONE", "TWO"
(dot) or "ONE_OR_TWO" (logsumexp's b); then NumPy's side: the keywords of "dtype initial where" it takes, whether it
has an identity, its ufunc ("" for none), whether it reduces a 0-d array over axis 0, its parameter "NONE", "DDOF",
"ORD", "CONJ" or "WEIGHTS", its reference function, its error-bound family "SUM", "PROD", "LOG", "OWN" or
"EXACT")."""
dtype_table: Final[tuple[tuple[str, str, int, str, str], ...]]
"""Per gr_dtype code (cuda/abi/dtypes.def): (name, kind "BOOL", "INT", "UINT", "FLOAT" or "COMPLEX", itemsize, the
dtype the kernels accumulate it in, the dtype of its real part)."""
dtype_names: Final[tuple[str, ...]]
"""NumPy dtype names indexed by gr_dtype code ("bool", "int8", ..., "complex128")."""
hot_set: Final[dict[str, tuple[str, ...]]]
"""The hot set of cuda/abi/hot_set.def, compiled ahead of time: {"dtypes": (...), "reduce": (operator names of the
axis reductions), "scan": (operators of the axis scans)}; every other call's kernels compile on first use."""
cub_hot_set: Final[tuple[tuple[str, str, str], ...]]
"""(kind, operator, dtype) of CUB's axis baselines (variant "cub") compiled ahead of time, kind "reduce" or "scan"
(cuda/abi/hot_set.def: GR_HOT_CUB); the others compile on first use."""
range_algorithms: Final[tuple[tuple[str, str, str], ...]]
"""(name, doc) of the segmented reductions' algorithms (cuda/abi/ranges.def), in gr_range_algorithm order."""
RANGES_STARTS_STOPS: Final[int]  # gr_ranges.form: segmented_reduce's bounds, the starts then the stops (or apart)
RANGES_REDUCEAT: Final[int]  # gr_ranges.form: reduceat's indices
RANGES_GROUP_IDS: Final[int]  # gr_ranges.form: one group id per element of the reduced axis (sums)

# ---- errors (src/errors.c) ----
class CudaError(RuntimeError):
    """A CUDA runtime call failed, or no CUDA device is available.

    The message reads "<what was being done>: <cudaError name>: <CUDA's text>", or, where no device can be
    used, "no CUDA device is available: <the cause>" (no driver, a driver too old, no GPU visible).  It has no
    attributes beyond RuntimeError's.
    """

class OutOfMemoryError(CudaError, MemoryError):
    """A device or pinned-host allocation failed (cudaErrorMemoryAllocation); the message names the bytes asked
    for and, for device memory, the free and total GiB.  ``except MemoryError`` catches it, as it does NumPy's
    and CuPy's."""

# ---- DeviceArray (src/device_array.c) ----
@final
class DeviceArray:
    """A C-contiguous array in device memory owned by gpureduce; made by gpureduce, never constructed directly
    (``DeviceArray()`` raises TypeError)."""

    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def ndim(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def itemsize(self) -> int: ...
    @property
    def device(self) -> int: ...
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """Version 3: shape, typestr, descr, data=(pointer, False), strides=None, version=3, stream (1 legacy,
        2 per-thread default stream, else the cudaStream_t handle)."""
    def __len__(self) -> int: ...
    def get(self) -> NDArray[Any]: ...
    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> NDArray[Any]: ...
    def __dlpack__(
        self,
        *,
        stream: int | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> CapsuleType: ...
    def __dlpack_device__(self) -> tuple[Literal[2], int]: ...
    # a one-element array's value on the host (a 0-d result's), after the work on the array's stream
    def item(self) -> Any: ...
    __hash__: None  # type: ignore[assignment]  # comparable by value, so unhashable, as NumPy's arrays
    def __float__(self) -> float: ...
    def __int__(self) -> int: ...
    def __index__(self) -> int: ...
    def __bool__(self) -> bool: ...
    def __complex__(self) -> complex: ...
    def __eq__(self, other: object) -> Any: ...  # type: ignore[override]
    def __ne__(self, other: object) -> Any: ...  # type: ignore[override]
    def __lt__(self, other: object) -> Any: ...
    def __le__(self, other: object) -> Any: ...
    def __gt__(self, other: object) -> Any: ...
    def __ge__(self, other: object) -> Any: ...

# ---- Operand (src/operand.c) ----
@final
class Operand:
    """An array read by the intake (``intake``): host memory (an aligned, native ndarray) or device memory
    read in place; made by gpureduce only."""

    @property
    def obj(self) -> Any: ...
    @property
    def array(self) -> NDArray[Any] | None: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def code(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def strides(self) -> tuple[int, ...]: ...
    @property
    def size(self) -> int: ...
    @property
    def host(self) -> bool: ...
    @property
    def readonly(self) -> bool: ...
    @property
    def protocol(self) -> Literal["numpy", "cuda_array_interface", "dlpack", "gpureduce", "cupy"]: ...
    def view(self, shape: tuple[int, ...], strides: tuple[int, ...], /) -> Operand: ...

@final
class Plan:
    """One call's device work as gpureduce/_planning/plan.py decided it, read and verified once (src/plan.c).
    a=None makes a template: a plan without its operands, given them by with_operands."""

    def __new__(
        cls,
        *,
        kind: int,
        launcher: int,
        layout: tuple[Any, ...],
        shape: tuple[int, ...],
        result_dtype: int,
        variant: int = -1,
        op: int = 0,
        a: Operand | None = None,
        second: Operand | None = None,
        mask: Operand | None = None,
        out: Operand | None = None,
        parameter: bytes | None = None,
        initial: bytes | None = None,
        exclusive: bool = False,
        ranges: tuple[Operand, int, int, int, int, int] | tuple[Operand, int, int, int, int, int, Operand | None]
        | None = None,
    ) -> Plan: ...
    def with_operands(self, a: Operand | None, second: Operand | None = None, mask: Operand | None = None,
                      out: Operand | None = None) -> Plan: ...
    @property
    def kind(self) -> int: ...
    @property
    def launcher(self) -> int: ...
    @property
    def variant(self) -> int: ...
    @property
    def op(self) -> int: ...
    @property
    def result_dtype(self) -> int: ...
    @property
    def a(self) -> Operand | None: ...
    @property
    def second(self) -> Operand | None: ...
    @property
    def mask(self) -> Operand | None: ...
    @property
    def out(self) -> Operand | None: ...
    @property
    def layout(self) -> tuple[Any, ...]: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def parameter(self) -> bytes | None: ...
    @property
    def initial(self) -> bytes | None: ...
    @property
    def exclusive(self) -> bool: ...
    @property
    def ranges(
        self,
    ) -> tuple[Operand, int, int, int, int, int] | tuple[Operand, int, int, int, int, int, Operand | None] | None:
        """A segmented reduction's or scan's (bounds, form, algorithm, mean_length, gaps, max_length[, stops]), or
        None (cuda/abi/gpureduce.h: gr_ranges); stops: device stops read apart from the starts, or with
        RANGES_GROUP_IDS the two zero int64 where the kernels note the ids out of range, or None."""

# ---- functions (core_methods in src/module.c) ----
def intake(obj: Any, role: str = "the input", /) -> Operand:
    """Read an array without touching the device: a NumPy array (or anything numpy.asarray takes), a DLPack
    exporter, a ``__cuda_array_interface__`` exporter or a DeviceArray.  `role` names it in errors."""

def run(plan: Plan, /) -> np.generic | NDArray[Any] | DeviceArray | Any:
    """The one runner: a Plan of gpureduce/_planning/plan.py -> a NumPy scalar (0-d), an ndarray (host input), a
    new DeviceArray (device input), or `out`'s object."""

def call_whole(kind: int, op: str, variant: str, exclusive: bool, a: Any, with_operand: bool = False, /) -> Any:
    """The result of a whole-array reduction or scan of `a` with the default arguments, run from the plan
    remember_whole kept for (kind, op, variant, exclusive, type(a), a's device and layout); with `with_operand`,
    (result, the Operand read from `a`), for NumPy's checks after the kernels.  Where none is kept: the Operand
    read from `a` (the planner takes it: one handshake a call), or NotImplemented when no plan is kept for `a`'s
    type (nothing was asked of `a`)."""

def remember_whole(kind: int, op: str, variant: str, exclusive: bool, x: Operand, template: Plan,
                   maker: tuple[Callable[..., Any], tuple[Any, ...], Callable[[Any], int]] | None,
                   convert: Callable[[Any], Any] | None, view: tuple[tuple[int, ...], tuple[int, ...]] | None,
                   /) -> None:
    """Keep a planned whole-array call of Operand `x` for call_whole (src/whole_calls.c): the template (a Plan
    without operands), the (allocate, args, pointer) of results.result_maker where the input's library makes the
    result, else None, the in_kind_of converter or None, and the flattened view a scan reads or None."""

def result_dtype(kind: int, op: int, in_dtype: int, /) -> int:
    """The dtype code NumPy's function of `op` gives for input dtype code `in_dtype` with dtype=None
    (``len(dtype_names)`` where there is none)."""

def segments_supported(kind: int, variant: int, op: int, in_dtype: int, out_dtype: int, /) -> bool: ...
def groups_scatter_runs(op: int, in_dtype: int, out_dtype: int, length: int, accumulators: int, /) -> bool:
    """Whether a reduction over group ids in any order (RANGES_GROUP_IDS) runs (op, in, out) by its integer
    scatter along an axis of `length` with `accumulators` (kept segments x groups) accumulators."""
def variant_table() -> tuple[tuple[int, int, str, int, int, int, str, str], ...]:
    """One row per variant: (index, kind, name, properties, ops mask, dtypes mask, seed, doc)."""

def device_count() -> int: ...
def device_properties() -> dict[str, Any]:
    """The current device: device, name, pci_bus_id (nvidia-smi's "00000000:19:00.0"), compute_capability (major,
    minor), sm_count, l2_bytes, memory_bytes."""

def memory_info() -> tuple[int, int]:
    """(free, total) bytes of the current device's memory (cudaMemGetInfo)."""

def resource_stats() -> dict[str, int]:
    """What gpureduce holds on the current device: pool_in_use, pool_reserved (bytes of the CUDA memory pool),
    exec_device_bytes, pinned_bytes (held by cached execution contexts), pinned_results_in_use and
    pinned_results_idle (pinned host memory of NumPy results, process-wide), execs, execs_leased, operands_kept
    (asynchronous calls whose operands are held until their work is done: src/keepalive.c)."""

def to_device(a: Any, /) -> DeviceArray:
    """A C-ordered copy of the host array `a` in the current device's memory, complete on return."""

def empty(shape: int | tuple[int, ...], dtype: DTypeLike, fill_byte: int | None = None) -> DeviceArray:
    """A new DeviceArray, uninitialised or with every byte `fill_byte` (0xFF: NaN in every float dtype)."""

def time_device(plan: Plan, repeats: int, warmup: int = 3, flush_l2: bool = True) -> tuple[list[float], Any]:
    """Device-side times in microseconds of `repeats` launches of the plan's kernels (after `warmup` more), the
    L2 flushed before each, and the plan's result (as _core.run gives it)."""

def time_ceiling(what: Literal["read", "copy", "h2d", "d2h"], a: Any, repeats: int, warmup: int = 3,
                 flush_l2: bool = True) -> list[float]:
    """Device-side times in microseconds of what bounds a kernel over the dense device array `a`: 'read' and
    'copy' the device's ceilings; 'h2d' and 'd2h' a copy of a.nbytes between `a` and pinned host memory of the
    call's own (h2d writes `a`'s own bytes back into it)."""

def time_calls(fn: Callable[[], Any], repeats: int, warmup: int = 3, flush_l2: bool = True) -> list[float]:
    """Device-side times in microseconds of `repeats` calls of fn() (work on the legacy default stream or a
    blocking stream: CuPy's, PyTorch's), the L2 flushed before each."""

def time_stages(plan: Plan, repeats: int, warmup: int = 10) -> dict[str, float]:
    """Median host-clock microseconds of the runner's stages: prepare, enqueue, complete, finish."""

# ---- kernels compiled on first use (src/jit.c) ----
def jit_kernels() -> tuple[tuple[int, str], ...]:
    """(program, name expression) of every kernel compiled on first use: those outside cuda/abi/hot_set.def."""

def jit_compile(program: int, name: str, arch: int, with_pch: bool = False, /) -> tuple[str, bool]:
    """The kernel's cubin for sm_<arch> in the disk cache: (its path, whether NVRTC compiled it now).  No GPU
    needed.  RuntimeError naming what is missing where NVRTC or the toolkit's headers are not found.  with_pch:
    NVRTC's automatic precompiled headers (the process's later kernels of a program parse faster), 60-200 MB a
    program under $TMPDIR, removed only at a normal exit of the process."""

def jit_info() -> dict[str, Any]:
    """cache_dir, nvrtc (the library, or every place tried), nvrtc_found, nvrtc_version, cuda_home,
    kernels_loaded, and this process's counts: compiled, read_from_disk, found_in_process, compile_seconds."""
