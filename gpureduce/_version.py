"""The version of gpureduce, in one place (pyproject.toml reads it from here)."""
__version__ = "0.1.0"
