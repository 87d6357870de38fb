"""How far token estimates land from exact o200k counts, per content type, and how fast we count.

    python benchmarks/token_estimate.py

Samples (a few hundred KB each, built here so anyone can rerun this offline): prose from
Python's own reference docs, Python source from the standard library, JSON records and a
JSON API payload, a CSV export and a DataFrame repr. Each sample is cut into 8 KB
tool-result-sized messages. Columns:

- chars/4: the usual rule of thumb.
- per-type: the ratio path (``TokenCounter`` with no BPE available): classify, then bytes / ratio.
- calibrated: the same through the session's ``Calibration`` fitted on a random half of the messages, with exact
  o200k message counts standing in for the provider's; measured on the held-out other half.
- worst msg: the per-type estimate's largest error on a single full 8 KB message.
- kind: what ``classify`` calls most of the sample's messages, and how many.
- MB/s: exact ``count_text`` throughput with the o200k BPE (tiktoken), cache cold, best of 3.

Errors are signed: negative means the estimate is short of the true count.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pydoc_data.topics
import random
import re
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from monad_notebook.context.occupancy.calibration import Calibration
from monad_notebook.context.occupancy.tokens import TokenCounter, classify

CHUNK = 8192
PROVIDER = "gpt-4o"  # exact o200k counts play the provider
UNKNOWN = "llama3.1:8b"
CODE_MODULES = (
    "argparse", "json.decoder", "json.encoder", "textwrap", "dataclasses", "pathlib", "logging",
    "csv", "heapq", "functools", "enum", "string", "shutil", "tempfile",
)  # fmt: skip


def prose() -> str:
    paragraphs = []
    for text in pydoc_data.topics.topics.values():
        for block in re.split(r"\n\s*\n", text):
            lines = block.splitlines()
            if lines and not any(line.startswith("     ") or "|" in line or ">>>" in line for line in lines):
                paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(p for p in paragraphs if len(p) > 200)


def python_code() -> str:
    return "\n\n".join(inspect.getsource(importlib.import_module(name)) for name in CODE_MODULES)


def json_records(n: int = 1500) -> str:
    rng = random.Random(1)
    first = ["Ada", "Grace", "Linus", "Margaret", "Alan", "Barbara", "Ken", "Dennis", "Frances", "John"]
    last = ["Lovelace", "Hopper", "Torvalds", "Hamilton", "Turing", "Liskov", "Thompson", "Ritchie", "Allen"]
    rows = []
    for i in range(n):
        f, la = rng.choice(first), rng.choice(last)
        rows.append(
            {
                "id": 100000 + i,
                "name": f"{f} {la}",
                "email": f"{f.lower()}.{la.lower()}{rng.randint(1, 99)}@example.com",
                "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
                "active": rng.random() > 0.3,
                "score": round(rng.uniform(0, 100), 2),
                "address": {
                    "city": rng.choice(["Berlin", "Lisbon", "Osaka", "Lima"]),
                    "zip": str(rng.randint(10000, 99999)),
                },
                "tags": rng.sample(["admin", "beta", "trial", "paid", "churned", "vip"], rng.randint(0, 3)),
            }
        )
    return json.dumps(rows[: n // 2], indent=2) + "\n" + json.dumps(rows[n // 2 :])


def json_api_payload(n: int = 400) -> str:
    rng = random.Random(2)
    sentences = re.split(r"(?<=\.) ", prose())
    issues = []
    for i in range(n):
        login = rng.choice(["octocat", "hubot", "monalisa", "defunkt", "mojombo"])
        issues.append(
            {
                "number": 4000 + i,
                "url": f"https://api.github.com/repos/acme/widgets/issues/{4000 + i}",
                "title": rng.choice(sentences)[:80],
                "state": rng.choice(["open", "closed"]),
                "user": {"login": login, "id": rng.randint(1, 10**7), "html_url": f"https://github.com/{login}"},
                "labels": [{"name": name} for name in rng.sample(["bug", "docs", "perf", "question"], 2)],
                "body": " ".join(rng.sample(sentences, 3)),
                "comments": rng.randint(0, 40),
                "updated_at": f"2025-0{rng.randint(1, 9)}-1{rng.randint(0, 9)}T08:15:00Z",
            }
        )
    return json.dumps(issues, indent=2)


def frame(rows: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "date": pd.date_range("2023-01-01", periods=rows, freq="h"),
            "region": rng.choice(["North", "South", "East", "West"], rows),
            "product": rng.choice(["widget", "gadget", "doohickey"], rows),
            "units": rng.integers(0, 500, rows),
            "price": rng.normal(20, 5, rows).round(2),
            "revenue": rng.normal(5000, 1500, rows),
        }
    )


SAMPLES = {
    "prose (Python reference docs)": prose,
    "Python code (stdlib)": python_code,
    "JSON records": json_records,
    "JSON API payload": json_api_payload,
    "CSV table": lambda: frame(4000, 2).to_csv(index=False),
    "DataFrame repr": lambda: frame(3000, 3).to_string(),
}


def as_messages(text: str) -> list[list[dict[str, str]]]:
    return [[{"role": "tool", "content": text[i : i + CHUNK]}] for i in range(0, len(text), CHUNK)]


def error(estimate: float, exact: int) -> float:
    return (estimate - exact) / exact


def time_count(text: str) -> float:
    """Seconds for one cold exact count (a fresh counter, so its cache cannot help)."""
    counter = TokenCounter(PROVIDER)
    started = time.perf_counter()
    counter.count_text(text)
    return time.perf_counter() - started


def measure(text: str, provider: TokenCounter) -> dict[str, float]:
    messages = as_messages(text)
    exact = [provider.count_messages(m) for m in messages]
    ratio = TokenCounter(UNKNOWN, loader=lambda name: None)
    per_type = [ratio.count_messages(m) for m in messages]
    overhead = provider.count_messages([{"role": "tool", "content": ""}])
    rule_of_thumb = sum(len(m[0]["content"]) / 4 + overhead for m in messages)
    order = list(range(len(messages)))
    random.Random(0).shuffle(order)
    seen, held_out = order[: len(order) // 2], order[len(order) // 2 :]
    calibration = Calibration()
    for i in seen:
        calibration.observe(per_type[i], 0, exact[i])
    calibrated = sum(calibration.predict(per_type[i], 0) for i in held_out)
    full = [i for i, m in enumerate(messages) if len(m[0]["content"]) == CHUNK]
    seconds = min(time_count(text) for _ in range(3))
    kinds = Counter(classify(m[0]["content"]) for m in messages)
    kind, votes = kinds.most_common(1)[0]
    return {
        "kb": len(text) / 1024,
        "kind": f"{kind} {votes / len(messages):.0%}",
        "cpt": len(text) / provider.count_text(text),
        "chars4": error(rule_of_thumb, sum(exact)),
        "per_type": error(sum(per_type), sum(exact)),
        "calibrated": error(calibrated, sum(exact[i] for i in held_out)),
        "worst": max((error(per_type[i], exact[i]) for i in full), key=abs),
        "mbs": len(text.encode()) / seconds / 1e6,
    }


def main() -> None:
    provider = TokenCounter(PROVIDER)
    assert provider.exact, "needs the o200k BPE: pip install 'monad-notebook[local]'"
    texts = {name: build() for name, build in SAMPLES.items()}
    print("| sample | KB | kind | chars/token | chars/4 | per-type | calibrated | worst msg | MB/s |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for name, text in texts.items():
        r = measure(text, provider)
        print(
            f"| {name} | {r['kb']:.0f} | {r['kind']} | {r['cpt']:.2f} | {r['chars4']:+.0%} | {r['per_type']:+.0%}"
            f" | {r['calibrated']:+.1%} | {r['worst']:+.0%} | {r['mbs']:.1f} |"
        )
    mixed = [m for text in texts.values() for m in as_messages(text)]
    random.Random(0).shuffle(mixed)
    session = [{"role": "tool", "content": m[0]["content"]} for m in mixed]
    half = len(session) // 2
    ratio = TokenCounter(UNKNOWN, loader=lambda name: None)
    calibration = Calibration()
    for i in range(0, half, 20):
        window = session[: i + 20]
        calibration.observe(ratio.count_messages(window), 0, provider.count_messages(window))
    held_out = session[half:]
    raw = ratio.count_messages(held_out)
    raw_err = error(raw, provider.count_messages(held_out))
    cal_err = error(calibration.predict(raw, 0), provider.count_messages(held_out))
    print(
        f"\nMixed session ({len(session)} messages, all types shuffled; the session calibration, "
        f"{half // 20 + 1} observations on growing windows of the first half): "
        f"per-type {raw_err:+.1%}, calibrated {cal_err:+.1%} on the held-out half "
        f"(ratio {calibration.fit.ratio:.3f}, offset {calibration.fit.offset:.0f})."
    )


if __name__ == "__main__":
    main()
