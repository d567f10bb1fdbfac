"""What the benchmark scripts share: the commit they measure."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def commit():
    """The commit measured: GR_COMMIT (the GPU machine's copy of the tree has no .git), else git's HEAD."""
    if os.environ.get("GR_COMMIT"):
        return os.environ["GR_COMMIT"]
    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                           timeout=10)
        return r.stdout.strip() or "unknown"
    except Exception:
        return "unknown"
