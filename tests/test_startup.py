"""``%load_ext monad_notebook`` stays quick: LanceDB and openai load in the background, not in the way."""

from __future__ import annotations

import json
import subprocess
import sys

CHILD = r"""
import json, sys, threading
from IPython.core.interactiveshell import InteractiveShell
held = []
start = threading.Thread.start
threading.Thread.start = lambda thread: held.append(thread)  # hold the warm-up until %load_ext has returned
shell = InteractiveShell.instance()
shell.run_line_magic("load_ext", "monad_notebook")
at_load = sorted(m for m in ("lancedb", "openai", "monad_notebook.session") if m in sys.modules)
threading.Thread.start = start
(warm,) = [t for t in held if t.name == "monad-warm-up"]
warm.start()
warm.join(120)
print(json.dumps({"at_load": at_load, "after_warm_up": "monad_notebook.session" in sys.modules}))
"""


def test_load_ext_defers_the_store_and_the_client_to_a_background_warm_up(tmp_path):
    done = subprocess.run([sys.executable, "-c", CHILD], cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"at_load": [], "after_warm_up": True}
