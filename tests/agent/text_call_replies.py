"""Replies that hold a tool call as text, as data: which are calls, and which only show one.

``REAL``: forms Qwen2.5-Coder-1.5B-Instruct (Q4_K_M, ``llama-server --jinja``) wrote in runs of
``benchmarks/local_model.py``: the earlier runs' as the tests quoted them, and every reply of a
later run as ``--replies`` recorded it (``local_model_replies.json``). Each must still be read as
the call it is; ``REAL_PROSE``, that run's answers that held no call (code for the user, the
question asked back), must stay prose. ``TUNING`` is what the rule in ``agent/text_calls.py``
(``beside_calls``: how many words, which words) was chosen on; ``HELD_OUT`` was written after it
was fixed, in other words, and only run then (it read 21 of 22 rightly; the one it missed is now
in ``TUNING``). Each entry is (reply, True when it is a call).
"""

from __future__ import annotations

import json
from pathlib import Path

RECORDED = {
    name: replies
    for name, replies in json.loads((Path(__file__).parent / "local_model_replies.json").read_text()).items()
    if name != "about"
}


def fenced(name: str, arguments: dict) -> str:
    return f"```json\n{json.dumps({'name': name, 'arguments': arguments})}\n```"


READ = fenced("read_file", {"path": "data/sales.csv", "offset": 0, "limit": 200})
WRITE = fenced("python", {"code": "open('notes.txt', 'w').write('written')"})
TAG = '<tool_call>\n{"name": "read_file", "arguments": {"path": "data/sales.csv"}}\n</tool_call>'
BARE = '{"name": "read_file", "arguments": {"path": "data/sales.csv"}}'

REAL: list[str] = [
    # the demo's first question
    READ,
    # the ten-turn session's first answer: a call, then what the model expected of it
    f"{READ}\nThe output will be the number of rows in the `sales` DataFrame.",
    # the demo: a call inside the tag the chat template lists the tools in, its arguments in single quotes
    '<tools>\n  <function name="python" arguments=\'{"code": "import pandas as pd; '
    "df = pd.read_csv('data/sales.csv'); print(df.head(5))\"}'/>\n</tools>",
    # the demo's third call: code between Python's triple quotes inside the JSON
    '```json\n{\n  "name": "python",\n  "arguments": {\n    "code": """\nimport pandas as pd\nsold = 12 + 9\n"""\n'
    "  }\n}\n```",
    # the data session: the object alone
    '{"name": "python", "arguments": {"code": "sales = pd.read_csv(\'data/sales.csv\')"}}',
    # every reply of a later run (``local_model_replies.json``) that held a call
    *(reply["text"] for run in RECORDED.values() for reply in run if reply["written"]),
]

# that run's replies that held no call (code for the user to run, the question asked back): prose
REAL_PROSE: list[str] = [reply["text"] for run in RECORDED.values() for reply in run if not reply["written"]]

TUNING: list[tuple[str, bool]] = [
    # calls: the whole reply, or a short lead-in, or a short remark after a call that opens it
    (READ, True),
    (TAG, True),
    (BARE, True),
    (f"Let me read it.\n{TAG}", True),
    (f"I'll load the CSV file and count the rows.\n{READ}", True),
    (f"Sure! I'll use the python tool to compute that.\n{WRITE}", True),
    (f"First, let me look at the columns of the DataFrame.\n{READ}", True),
    (f"I need to check what variables exist.\n{fenced('list_variables', {})}", True),
    (f"Let's read the file first:\n{READ}", True),
    (f"Okay, calling the tool now.\n{TAG}", True),
    (
        f"To find the region with the highest revenue, I will group the data by region and sum the revenue:\n{WRITE}",
        True,
    ),
    (f"The user wants the monthly totals. I'll compute them with pandas.\n{WRITE}", True),
    (f"Now I'll describe the `sales` DataFrame:\n{fenced('describe', {'name': 'sales'})}", True),
    (f"I would like to read the file first.\n{READ}", True),
    (f"Let me see what the data looks like.\n{READ}", True),
    (f"Sure, here is the tool call:\n{TAG}", True),
    (f"Calling read_file:\n{READ}", True),
    (f"{READ}\nThis will load the data and print the first five rows.", True),
    (f"{BARE}\nOnce I have the result I will answer your question.", True),
    (f"{WRITE}\nAfter this runs, notes.txt will hold the text.", True),
    # shown, not made: an example the prose presents, or a call it says it does not make
    (
        "The read_file tool reads a text file under the notebook's folder and returns its lines with "
        "numbers; offset and limit page through a long file. For example, to read the first 200 lines "
        f"of data/sales.csv:\n{READ}",
        False,
    ),
    (f"You can call a tool by writing JSON like this:\n{READ}", False),
    (f"Here is an example of a tool call:\n{WRITE}", False),
    (f"A call to the python tool would look like this:\n{WRITE}", False),
    (f"For instance, to write a file the call would be:\n{WRITE}", False),
    (f"I won't run this, but this is the call you'd need:\n{WRITE}", False),
    (f"The syntax for calling a tool is:\n{TAG}", False),
    (f"I can't execute code myself. You can run this:\n{WRITE}", False),
    (f"Suppose you wanted to save the notes; you'd send:\n{WRITE}", False),
    (f"Tool calls are written as a JSON object with a name and arguments, e.g.:\n{BARE}", False),
    (
        "The python tool runs code in your kernel and shows its output in the notebook. The read_file tool "
        "reads a file. Both take JSON arguments. Each call is answered with its result, which the model "
        f"reads before it answers.\n{READ}",
        False,
    ),
    (f"{WRITE}\nThis is what such a call looks like; I am not running it.", False),
    (f"{WRITE}\nThat is an example of the format. I have not executed it.", False),
    (f"{WRITE}\n(example only, not run)", False),
    (f"{WRITE}\nAbove is a sample call. Don't run it.", False),
    (f"{READ}\nThis is just to show the syntax.", False),
    (f"{WRITE}\nYou could send this to write the file.", False),
    # first written for the held-out set, where the rule read it as a call: moved here once the rule learned it
    (f"If I were to save it, the request might be:\n{fenced('python', {'code': 'monthly.to_csv(...)'})}", False),
]

SAVE = fenced("python", {"code": "monthly.to_csv('monthly.csv')"})
FORGET = '<tool_call>\n{"name": "forget", "arguments": {"id": "f1"}}\n</tool_call>'

HELD_OUT: list[tuple[str, bool]] = [
    (f"Checking the file.\n{READ}", True),
    (f"OK.\n{SAVE}", True),
    (f"I will save the monthly table now.\n{SAVE}", True),
    (f"To answer that I need the data, so I'm reading the CSV.\n{READ}", True),
    (f"Great question! Let me compute it.\n{SAVE}", True),
    (f"Next step: saving the result to monthly.csv.\n{SAVE}", True),
    (f"I'm going to list the variables in your kernel first.\n{fenced('list_variables', {})}", True),
    (f"{SAVE}\nThen I will tell you where the file is.", True),
    (f"{READ}\nI expect the first lines to show the column names.", True),
    (f"Running the code:\n{SAVE}", True),
    (f"Alright, forgetting that fact as you asked.\n{FORGET}", True),
    (f"The `forget` tool removes a saved fact by its id. To remove f1 one would write:\n{FORGET}", False),
    (f"Here's how you could save the table yourself:\n{SAVE}", False),
    (f"Below is a demonstration of the JSON a tool call uses.\n{READ}", False),
    (f"{SAVE}\nI haven't run that; it only shows the shape of a call.", False),
    (f"{FORGET}\nI am not going to call this without your go-ahead.", False),
    (f"{SAVE}\nNote: this is an illustration, nothing was executed.", False),
    (
        "Saving a DataFrame is done with to_csv. The path is relative to the notebook's folder, and index=False "
        "leaves the index out. Large tables take a moment. Afterwards the file can be read back with read_csv, "
        f"which parses it again.\n{SAVE}",
        False,
    ),
    (f"To call a tool, reply with an object naming it and its arguments:\n{BARE}", False),
    (f"For reference, reading the file looks like this:\n{READ}", False),
    (f"Example:\n{FORGET}", False),
]
