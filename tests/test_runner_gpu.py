"""The runner's own buffers (src/run.c, src/exec.c): regressions that only a fresh process shows.

A 0-d result is written straight into the leased exec's pinned buffer, which the same call may grow for a
host input: the kernel must get the buffer's address after it is sized (it once got the old one, null in a
fresh process: "invalid argument" on the first call; a freed buffer after a growth).
"""
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

CHILD = textwrap.dedent("""
    import numpy as np, gpureduce
    rng = np.random.default_rng()
    # the first call of the process has a 0-d result; later host inputs grow the pinned buffer step by step
    for n in (1000, 1000, 20000, 70000, 300000, 524288, 4 << 20 >> 3, 3):
        x = rng.integers(-1000, 1000, n)
        got = gpureduce.sum(x)
        assert got == x.sum(), (n, got, x.sum())
        f = x.astype(np.float32)
        assert gpureduce.max(f) == f.max(), n
        assert gpureduce.argmin(f) == f.argmin(), n
    print("ok")
""")


def test_first_call_and_growing_pinned_buffer_in_a_fresh_process():
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stdout + done.stderr
