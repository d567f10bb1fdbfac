"""The pytest plugin of gpureduce: the ``gpu`` marker.

A test marked ``@pytest.mark.gpu`` needs a CUDA device: where ``gpureduce.device_count()`` is 0 it is
skipped with the reason "no CUDA device on this machine" (or, where counting fails, that error's text).
With the environment variable ``GPUREDUCE_REQUIRE_GPU=1`` (a GPU runner, where a skip would hide a broken
driver) the session stops with a usage error instead, naming the cause, as soon as gpu tests are collected.

An installed gpureduce registers this module through its ``pytest11`` entry point, so every pytest session
of that environment has the marker; ``-p no:gpureduce.pytest_plugin`` turns it off (the entry point carries
the module's own name, so ``-p gpureduce.pytest_plugin`` finds it registered already).  A source checkout built in
place has no entry point: its ``conftest.py`` calls :func:`register` from ``pytest_configure``.

The plugin costs nothing until a ``gpu``-marked test is collected: only then does it ask gpureduce for the
device count (which initialises the CUDA runtime), once per session.  Being a submodule, it is imported
after the ``gpureduce`` package itself: a gpureduce that cannot be imported at all stops pytest at start-up
with that ImportError (``-p no:gpureduce.pytest_plugin`` runs without the plugin).
"""
from __future__ import annotations

import os
import sys

import pytest

MARKER = "gpu: needs a CUDA device; skipped where none is found"
REQUIRE_GPU_ENV = "GPUREDUCE_REQUIRE_GPU"
NO_DEVICE = "no CUDA device on this machine"

_missing_device_key = pytest.StashKey[str]()


def register(config: pytest.Config) -> None:
    """Register this plugin in `config` unless it already is.

    For a ``conftest.py`` that must work both with an installed gpureduce (the ``pytest11`` entry point has
    registered the plugin) and with a source tree built in place (nothing has): registering one module under
    a second name raises "Plugin already registered", so the check is on the module object, whatever name it
    was registered under.

    Parameters
    ----------
    config : pytest.Config
        The session's configuration, as ``pytest_configure`` receives it.

    Returns
    -------
    None
        The plugin is registered in ``config.pluginmanager`` once.

    See Also
    --------
    pytest.PytestPluginManager.is_registered : The check made.

    Examples
    --------
    In a ``conftest.py``:

    >>> import gpureduce.pytest_plugin
    >>> def pytest_configure(config):
    ...     gpureduce.pytest_plugin.register(config)
    """
    this = sys.modules[__name__]
    if not config.pluginmanager.is_registered(this):
        config.pluginmanager.register(this, __name__)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)


def _require_gpu() -> bool:
    return os.environ.get(REQUIRE_GPU_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _missing_device(config: pytest.Config) -> str:
    """Why gpu tests cannot run here ("" where they can), asked of gpureduce once per session."""
    if _missing_device_key not in config.stash:
        try:
            import gpureduce

            count = gpureduce.device_count()
        except Exception as error:  # noqa: BLE001 - any failure means no device to run on; its text is the reason
            reason = f"gpureduce could not count CUDA devices: {type(error).__name__}: {error}"
        else:
            reason = "" if count > 0 else NO_DEVICE
        config.stash[_missing_device_key] = reason
    return config.stash[_missing_device_key]


@pytest.hookimpl(trylast=True)  # after -m / -k deselection: only the gpu tests that will run count
def pytest_collection_modifyitems(config: pytest.Config, items: list) -> None:
    gpu_items = [item for item in items if item.get_closest_marker("gpu") is not None]
    if not gpu_items:
        return
    reason = _missing_device(config)
    if not reason:
        return
    if _require_gpu():
        raise pytest.UsageError(f"{REQUIRE_GPU_ENV}=1 and {len(gpu_items)} gpu tests were collected, but {reason}")
    skip = pytest.mark.skip(reason=reason)
    for item in gpu_items:
        item.add_marker(skip)
