"""The smoke check behind ``python benchmarks/fixtures.py check``: each fixture's server, once, for real.

- qwen: one chat request with a tool offered (temperature 0), through the OpenAI-compatible
  ``/v1/chat/completions``; prints what came back (a parsed tool call, or text) and the speed
  the server reports for generation and for the prompt.
- gemma: the passages below embedded with the passage prefix, then each query with the query
  prefix, through ``/v1/embeddings``; prints the dimensions, the passage each query ranks first,
  passages per second (batches of 8) and milliseconds per query.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.fixtures import chat_server, embedding_server, fetch, say

QUERY_PREFIX = "task: search result | query: "
PASSAGE_PREFIX = "title: none | text: "
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city's name"}},
            "required": ["city"],
        },
    },
}
PASSAGES = [
    "df = pd.read_csv('data/sales_2023.csv') loaded 48,210 orders with their region and date.",
    "git reset --soft HEAD~1 moves the branch back one commit and keeps the changes staged.",
    "The chart was blank because plt.show() ran before ax.plot(); plotting first fixed it.",
    "churned = users[users.last_order < cutoff] holds 1,204 accounts with no order in 90 days.",
    "The sales team meets every Monday to review the regional targets.",
    "git log --oneline lists the commits of the current branch.",
    "New customers get ten percent off their first order.",
    "The office plants are watered on Fridays.",
]
QUERIES = [
    ("which file did the sales data come from?", 0),
    ("how do I undo my last commit without losing the work?", 1),
    ("why was my figure empty?", 2),
    ("customers who stopped buying", 3),
]


def post(base_url: str, path: str, body: dict) -> dict:
    request = urllib.request.Request(base_url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.load(response)


def check_chat() -> None:
    with chat_server(fetch("qwen")) as base_url:
        question = "What is the weather in Lisbon right now?"
        body = {"messages": [{"role": "user", "content": question}], "tools": [WEATHER_TOOL], "temperature": 0}
        started = time.perf_counter()
        reply = post(base_url, "/chat/completions", {**body, "max_tokens": 128})
        elapsed = time.perf_counter() - started
    message, timings = reply["choices"][0]["message"], reply.get("timings", {})
    calls = [(call["function"]["name"], call["function"]["arguments"]) for call in message.get("tool_calls") or []]
    say(f"qwen asked {question!r} with get_weather offered")
    say(f"  tool calls: {calls or 'none'}; text: {message.get('content')!r}")
    say(
        f"  {reply['usage']['completion_tokens']} tokens generated at {timings.get('predicted_per_second', 0):.1f}"
        f" tokens/s; prompt of {reply['usage']['prompt_tokens']} tokens at {timings.get('prompt_per_second', 0):.1f}"
        f" tokens/s; {elapsed:.1f} s in all"
    )


def throughput_passages(count: int = 32) -> list[str]:
    """Distinct notebook-like sentences (no two alike, so nothing is served from a cache)."""
    subjects = ["the orders table", "the sensor log", "the survey export", "the churn model"]
    actions = ["was filtered to", "grew by", "lost", "was resampled to"]
    return [
        f"{PASSAGE_PREFIX}In cell {i}, {subjects[i % 4]} {actions[i // 4 % 4]} {137 * (i + 3)} rows"
        f" after dropping duplicates on column c{i} and joining on the customer id."
        for i in range(count)
    ]


def embed(base_url: str, texts: list[str], batch: int = 8) -> tuple[list[list[float]], int]:
    """Vectors of ``texts`` in batches, and the prompt tokens the server counted."""
    vectors, tokens = [], 0
    for start in range(0, len(texts), batch):
        reply = post(base_url, "/embeddings", {"input": texts[start : start + batch]})
        vectors += [row["embedding"] for row in reply["data"]]
        tokens += reply["usage"]["prompt_tokens"]
    return vectors, tokens


def check_embeddings() -> None:
    with embedding_server(fetch("gemma")) as base_url:
        passages, _ = embed(base_url, [PASSAGE_PREFIX + text for text in PASSAGES])
        timed = throughput_passages()
        started = time.perf_counter()
        _, timed_tokens = embed(base_url, timed)
        passage_seconds = time.perf_counter() - started
        query_seconds, queries = [], []
        for query, _ in QUERIES:
            started = time.perf_counter()
            queries.append(post(base_url, "/embeddings", {"input": [QUERY_PREFIX + query]})["data"][0]["embedding"])
            query_seconds.append(time.perf_counter() - started)
    scores = np.asarray(queries) @ np.asarray(passages).T
    say(f"gemma embedded {len(PASSAGES)} passages and {len(QUERIES)} queries: {len(passages[0])} dimensions")
    for (query, expected), row in zip(QUERIES, scores, strict=True):
        best = int(np.argmax(row))
        verdict = "right" if best == expected else f"WRONG (expected #{expected})"
        say(f"  {query!r} -> #{best} {PASSAGES[best][:60]!r} ({verdict})")
    say(
        f"  {len(timed) / passage_seconds:.1f} passages/s ({len(timed)} passages of {timed_tokens / len(timed):.0f}"
        " tokens, batches of 8);"
        f" {1000 * float(np.median(query_seconds)):.0f} ms per query (median)"
    )


def check() -> None:
    check_chat()
    check_embeddings()
