"""monad-notebook: an LLM agent session in your notebook that does not forget.

    %load_ext monad_notebook

    %%monad
    Load data/sales.csv and tell me which region grew fastest last quarter.

The public names are imported lazily, so ``import monad_notebook.config`` stays cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["Config", "MonadError", "Reply", "Session", "load_config", "load_ipython_extension"]
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
    from monad_notebook.magics import MonadMagics

    ipython.register_magics(MonadMagics(ipython))
