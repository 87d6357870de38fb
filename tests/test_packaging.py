"""The wheel carries the committed JupyterLab / Notebook 7 extension build where Jupyter finds it, and the
context panel's built module.

The build backend (hatchling) runs no build hook, so installing never runs Node: both are built from
``js/`` by ``npm run build`` and committed, and ``.ci/run`` checks they match their sources.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = "share/jupyter/labextensions/monad-notebook/"


@pytest.mark.slow
def test_the_wheel_ships_the_committed_extension_build_as_shared_data(tmp_path):
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = tmp_path.glob("monad_notebook-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        data = next(name.split(SHARED)[0] for name in names if SHARED in name)
        package = json.loads(archive.read(data + SHARED + "package.json"))
        shipped = {name.removeprefix(data + SHARED) for name in names if name.startswith(data + SHARED)}
    committed = {
        str(p.relative_to(ROOT / "monad_notebook" / "labextension"))
        for p in (ROOT / "monad_notebook" / "labextension").rglob("*")
        if p.is_file()
    }
    assert package["name"] == "monad-notebook" and package["jupyterlab"]["_build"]["load"] in shipped
    assert shipped == committed | {"install.json"}
    assert "monad_notebook/widget/panel.js" in names  # the context panel's built module
