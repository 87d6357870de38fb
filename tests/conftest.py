"""Every test runs isolated: its own MONAD_HOME, no config file, no API key, its own cwd."""

from __future__ import annotations

import pytest


def isolate(root, monkeypatch):
    """MONAD_HOME and the cwd under ``root``, no config file, no API key: the work dir.

    ``isolated_env`` does this for each test; a fixture shared by a module's tests calls it
    with its own root and ``pytest.MonkeyPatch.context()``, as it is set up before that.
    """
    home = root / "monad-home"
    home.mkdir()
    monkeypatch.setenv("MONAD_HOME", str(home))
    for var in ("MONAD_CONFIG", "OPENAI_API_KEY", "OPENAI_BASE_URL", "MONAD_MODEL"):
        monkeypatch.delenv(var, raising=False)
    work = root / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    return isolate(tmp_path, monkeypatch)


@pytest.fixture(scope="session")
def ip():
    """IPython's in-process test shell, shared by every test that needs one (no kernel)."""
    from IPython.testing import globalipapp

    # Looked up on the module each time: once started, globalipapp rebinds get_ipython to the shell's own.
    return globalipapp.get_ipython()


@pytest.fixture
def store(tmp_path):
    """A real LanceDB store in a temp dir, closed after the test."""
    from monad_notebook.store.lance import LanceStore

    store = LanceStore(tmp_path / "db")
    yield store
    store.close()


@pytest.fixture
def rich(ip, monkeypatch):
    """The cell as a Jupyter frontend shows it: displays, in-place updates and printed output, in order."""
    from monad_notebook.magics import MonadMagics
    from tests.frontend import Frontend

    frontend = Frontend()
    monkeypatch.setattr(ip, "display_pub", frontend)
    monkeypatch.setattr(ip.display_formatter, "active_types", ["text/plain", "text/markdown", "text/html"])
    monkeypatch.setattr(MonadMagics, "rich", property(lambda self: True))
    return frontend
