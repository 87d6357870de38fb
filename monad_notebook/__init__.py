"""monad-notebook: an LLM agent session in your notebook that does not forget.

    %load_ext monad_notebook

    %%monad
    Load data/sales.csv and tell me which region grew fastest last quarter.

The public names are imported lazily, so ``import monad_notebook.config`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "Config",
    "MonadError",
    "Reply",
    "Session",
    "load_config",
    "load_ipython_extension",
    "unload_ipython_extension",
]
__version__ = "0.1.0"

_LAZY = {
    "Config": "monad_notebook.config",
    "load_config": "monad_notebook.config",
    "MonadError": "monad_notebook.errors",
    "Reply": "monad_notebook.agent.loop",
    "Session": "monad_notebook.session",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'monad_notebook' has no attribute {name!r}")


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics at once; import the session's heavy parts (LanceDB, openai) in the background.

    ``%load_ext`` returns before LanceDB and openai are loaded; a warm-up thread imports them
    while the user writes the first cell, which then finds them ready (or waits for the rest).
    """
    from monad_notebook.daemon import Daemon
    from monad_notebook.magics import MonadMagics
    from monad_notebook.notebook.agent_runs import AGENT_RUNS

    magics = MonadMagics(ipython)
    ipython.register_magics(magics)
    ipython.events.register("post_run_cell", magics.after_cell)
    ipython.events.register("pre_run_cell", AGENT_RUNS.before_cell)
    ipython.events.register("post_run_cell", AGENT_RUNS.after_cell)
    Daemon("monad-warm-up", _warm_up).start()


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext``: cells the user runs are no longer noted in the sessions' workspace records."""
    from monad_notebook.notebook.agent_runs import AGENT_RUNS

    magics = ipython.magics_manager.registry.get("MonadMagics")
    if magics is not None and magics.after_cell in ipython.events.callbacks["post_run_cell"]:
        ipython.events.unregister("post_run_cell", magics.after_cell)
    if AGENT_RUNS.before_cell in ipython.events.callbacks["pre_run_cell"]:
        ipython.events.unregister("pre_run_cell", AGENT_RUNS.before_cell)
    if AGENT_RUNS.after_cell in ipython.events.callbacks["post_run_cell"]:
        ipython.events.unregister("post_run_cell", AGENT_RUNS.after_cell)


def _warm_up() -> None:
    try:
        import_module("monad_notebook.session")
    except Exception:  # the first cell imports it again and reports the problem there, in one line
        return
