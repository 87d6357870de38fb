"""A scripted session whose export the tests read: code that ran, failed and was declined, another tool, answers."""

from __future__ import annotations

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.testing import ScriptedModel, tool_call
from tests.hostile import MARKDOWN_LOADS

DECLINED_CODE = "import shutil\nshutil.rmtree('data')"
SCRIPT = [
    tool_call("python", {"code": "import math\nradius = 3\nprint('area', round(math.pi * radius ** 2, 2))"}),
    tool_call("python", {"code": "undefined_name + 1"}),
    tool_call("python", {"code": DECLINED_CODE}),
    tool_call("python", {"code": "doubled = radius * 2\ndoubled"}),
    "The area is 28.27 and the diameter 6.",
    tool_call("read_file", {"path": "missing.txt"}),
    tool_call("python", {"code": "import sys\nprint('checked', file=sys.stderr)\nwords = ['a', 'b']\nlen(words)"}),
    "Two words. " + " ".join(form.text.replace("HOST", "127.0.0.1:9") for form in MARKDOWN_LOADS[:4]),
]


def run_session(store, name: str = "work") -> Session:
    """Two turns: code that ran, code that failed, code the user declined, another tool, answers."""
    config = Config.model_validate({"tools": {"python": {"approval": "ask"}}})
    session = Session(name, config=config, store=store, model=ScriptedModel(list(SCRIPT)), namespace={})
    session.approve = lambda code: code != DECLINED_CODE
    session.ask("What is the area of a circle of radius 3?")
    session.ask("How many words are there?")
    return session
