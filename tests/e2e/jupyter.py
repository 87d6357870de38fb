"""A Jupyter server of our own (JupyterLab or Notebook 7) for the browser tests, isolated from the user's config.

``settings`` writes JupyterLab user settings into the isolated settings dir before start, e.g. the
dark theme: ``{"@jupyterlab/apputils-extension/themes": {"theme": "JupyterLab Dark"}}``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LABEXTENSION = Path(__file__).resolve().parents[2] / "monad_notebook" / "labextension"  # the committed build

NO_NEWS = {"@jupyterlab/apputils-extension/notification": {"fetchNews": "false"}}
DARK_THEME = {"@jupyterlab/apputils-extension/themes": {"theme": "JupyterLab Dark"}, **NO_NEWS}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_agents(workdir: Path, base_url: str, **tools: dict[str, Any]) -> None:
    """``workdir/agents.json``: the main model at ``base_url`` (a fake server), no retries, and ``tools`` settings."""
    agents = {"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": base_url, "maxRetries": 0}}, "tools": tools}
    (workdir / "agents.json").write_text(json.dumps(agents))


def write_notebook(path: Path, sources: list[str]) -> None:
    cells = [
        {
            "id": f"cell-{n}",
            "cell_type": "code",
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        }
        for n, source in enumerate(sources)
    ]
    notebook = {
        "cells": cells,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path.write_text(json.dumps(notebook))


def _notary(scratch: Path) -> Any:
    """The notary of the server ``jupyter_server(..., scratch)`` starts: its secret and its signatures."""
    from nbformat.sign import NotebookNotary

    data_dir = scratch / "jupyter_data_dir"
    data_dir.mkdir(parents=True, exist_ok=True)
    return NotebookNotary(data_dir=str(data_dir))


def sign(path: Path, scratch: Path) -> None:
    """Sign the notebook as ``jupyter trust`` does: that server opens it trusted."""
    import nbformat

    _notary(scratch).sign(nbformat.read(path, as_version=4))


def signed(path: Path, scratch: Path) -> bool:
    """Whether that server signed the notebook as saved, so it opens trusted (every output was the user's)."""
    import nbformat

    return bool(_notary(scratch).check_signature(nbformat.read(path, as_version=4)))


APPS = {
    # app name -> (extra flags, where notebooks open)
    "lab": (["--LabApp.expose_app_in_browser=True"], "/lab/tree/"),
    "notebook": (["--JupyterNotebookApp.expose_app_in_browser=True"], "/notebooks/"),
}


@contextlib.contextmanager
def jupyter_server(
    app: str,
    workdir: Path,
    scratch: Path,
    notebook: str = "panel.ipynb",
    settings: dict[str, dict[str, Any]] | None = None,
    extension: bool = False,
) -> Iterator[str]:
    """A Jupyter server of our own on 127.0.0.1, isolated from the user's config; yields the notebook URL.

    ``extension``: the monad-notebook JupyterLab extension of this checkout (its committed build) is
    installed in the server's isolated data directory, whichever copy pip installed elsewhere.
    """
    env = dict(os.environ)
    for name in (
        "XDG_CONFIG_HOME",
        "JUPYTER_CONFIG_DIR",
        "JUPYTER_DATA_DIR",
        "JUPYTER_RUNTIME_DIR",
        "IPYTHONDIR",
        "JUPYTERLAB_SETTINGS_DIR",
        "JUPYTERLAB_WORKSPACES_DIR",
    ):
        env[name] = str(scratch / name.lower())
    if extension:
        installed = scratch / "jupyter_data_dir" / "labextensions" / "monad-notebook"
        installed.parent.mkdir(parents=True, exist_ok=True)
        installed.symlink_to(LABEXTENSION, target_is_directory=True)
    for plugin, values in (settings or {}).items():
        target = scratch / "jupyterlab_settings_dir" / f"{plugin}.jupyterlab-settings"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    flags, path = APPS[app]
    port, token = free_port(), "monad-e2e"
    command = [sys.executable, "-m", "jupyter", app, "--no-browser", "--allow-root", f"--ServerApp.token={token}"]
    command += ["--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0", *flags]
    command += [f"--ServerApp.root_dir={workdir}"]
    base = f"http://127.0.0.1:{port}"
    with (scratch / f"{app}.log").open("w") as log:
        server = subprocess.Popen(command, cwd=workdir, env=env, stdout=subprocess.DEVNULL, stderr=log)
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=1)
                    break
                except OSError:
                    if time.monotonic() > deadline or server.poll() is not None:
                        pytest.fail(f"jupyter {app} did not start: " + (scratch / f"{app}.log").read_text()[-2000:])
                    time.sleep(0.2)
            yield f"{base}{path}{notebook}?token={token}"
        finally:
            server.terminate()
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()


def notebook_page(browser: Any, url: str, *, width: int, height: int) -> Any:
    """A page on ``url`` once its kernel is idle, the side panels closed so the notebook has the width."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url)
    page.wait_for_function(
        "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
        timeout=60_000,
    )
    page.evaluate("() => { const s = window.jupyterapp.shell; s.collapseLeft?.(); s.collapseRight?.(); }")
    return page


def execute(notebook: Path, workdir: Path):
    import nbformat
    from nbclient import NotebookClient

    shutil.copy(notebook, workdir / notebook.name)
    nb = nbformat.read(workdir / notebook.name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(workdir)}}).execute()
    return nb


def cell_text(cell) -> str:
    parts = []
    for output in cell.get("outputs", []):
        if "text" in output:
            parts.append(output["text"])
        for key in ("text/markdown", "text/plain"):
            if key in output.get("data", {}):
                parts.append(output["data"][key])
    return "\n".join(parts)
