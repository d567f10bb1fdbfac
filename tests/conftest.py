"""Shared test setup: gpureduce's pytest plugin (the `gpu` marker), fixtures, device-array factories."""
import os

# JAX takes 75% of the GPU's memory at its first array unless told not to; the suite shares the GPU between
# CuPy, PyTorch, JAX and gpureduce (the 2^31-element tests need 26 GiB of it).
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import gpureduce  # noqa: E402
import gpureduce.pytest_plugin  # noqa: E402

HAVE_GPU = gpureduce.device_count() > 0
pytest_plugins = ["pytester"]  # tests/test_testing_cpu.py runs pytest sessions of its own


def pytest_configure(config):
    # An installed gpureduce brings the plugin through its pytest11 entry point; a tree built in place does not.
    gpureduce.pytest_plugin.register(config)


# Property-based examples run in this session (hypothesis tests call count_example once per example), so the
# GPU check can quote the number.
_EXAMPLES = [0]


def count_example():
    _EXAMPLES[0] += 1


def pytest_terminal_summary(terminalreporter):
    if _EXAMPLES[0]:
        terminalreporter.write_line(f"hypothesis examples run: {_EXAMPLES[0]}")


@pytest.fixture
def rng():
    """Fresh random data in every test run (the seed is printed on failure)."""
    seed = np.random.SeedSequence().entropy % (2**32)
    print(f"random seed {seed}")
    return np.random.default_rng(seed)


def _cupy():
    return pytest.importorskip("cupy")


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    return torch


def _numba_cuda():
    numba_cuda = pytest.importorskip("numba.cuda")
    if not numba_cuda.is_available():
        pytest.skip("numba without CUDA")
    return numba_cuda


# name -> function(host ndarray) -> an array of that library on the device, holding the same values
DEVICE_LIBRARIES = {
    "cupy": lambda a: _cupy().asarray(a),
    "torch": lambda a: _torch().from_numpy(np.ascontiguousarray(a)).cuda(),
    "numba": lambda a: _numba_cuda().to_device(np.ascontiguousarray(a)),
}
