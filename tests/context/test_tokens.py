from __future__ import annotations

import gzip
import inspect
import json
import logging
import pydoc_data.topics
import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tiktoken
import tiktoken_ext.openai_public as openai_public

from monad_notebook.context.occupancy import tokens
from monad_notebook.context.occupancy.tokens import (
    CHARS_PER_TOKEN,
    EncodingLoader,
    TokenCounter,
    classify,
    effective_input_tokens,
    encoding_name_for,
    get_encoding,
)

BUNDLED = tokens._bundled_data_dir()


def no_encoding(name: str) -> None:
    return None


def offline(name: str) -> tiktoken.Encoding:
    raise ConnectionError("no network")


@pytest.fixture(scope="module")
def bundled() -> EncodingLoader:
    """bpe-openai's files only, no tiktoken: what an offline machine gets. Shared to load each file once."""
    if BUNDLED is None:
        pytest.skip("needs bpe-openai (the 'local' extra)")
    return EncodingLoader(fallback=None)


@pytest.fixture(scope="module")
def o200k(bundled) -> tiktoken.Encoding:
    encoding = bundled.get("o200k_base")
    assert encoding is not None
    return encoding


def prose_sample(chars: int = 60_000) -> str:
    paragraphs = []
    for text in pydoc_data.topics.topics.values():
        for block in text.split("\n\n"):
            lines = block.splitlines()
            if lines and not any(line.startswith("     ") or "|" in line or ">>>" in line for line in lines):
                paragraphs.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(p for p in paragraphs if len(p) > 200)[:chars]


def code_sample() -> str:
    return "\n\n".join(inspect.getsource(m) for m in (json.decoder, json.encoder, threading))


def records(n: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    names = ["Ada Lovelace", "Grace Hopper", "Alan Turing", "Barbara Liskov", "Ken Thompson"]
    return [
        {
            "id": 1000 + i,
            "name": rng.choice(names),
            "created_at": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T10:00:00Z",
            "active": rng.random() > 0.5,
            "score": round(rng.uniform(0, 100), 2),
            "tags": rng.sample(["beta", "paid", "trial", "vip"], 2),
        }
        for i in range(n)
    ]


def frame(rows: int) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return pd.DataFrame(
        {
            "date": pd.date_range("2024-01-01", periods=rows, freq="D"),
            "region": rng.choice(["North", "South", "East", "West"], rows),
            "units": rng.integers(0, 500, rows),
            "revenue": rng.normal(5000, 1500, rows).round(2),
        }
    )


def test_offline_o200k_produces_the_official_token_ids(o200k):
    assert o200k.name == "o200k_base"
    assert o200k.encode("hello world") == [24912, 2375]
    assert o200k.encode(" 日本語とEnglish 12345!\n") == [17428, 40909, 5330, 28881, 220, 7633, 2548, 4175]
    assert o200k.encode_ordinary("<|endoftext|>") == [27, 91, 419, 1440, 919, 91, 29]
    assert o200k.encode("<|endoftext|>", allowed_special="all") == [199999]
    assert o200k.decode(o200k.encode("请考试我的软件！12345")) == "请考试我的软件！12345"


def test_offline_cl100k_produces_the_official_token_ids(bundled):
    cl100k = bundled.get("cl100k_base")
    assert cl100k is not None
    assert cl100k.encode("hello world") == [15339, 1917]
    assert cl100k.encode("hello <|endoftext|>", allowed_special="all") == [15339, 220, 100257]
    assert cl100k.encode("today\n \n") == [31213, 27907]
    assert cl100k.encode("👍") == [9468, 239, 235]


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_bundled_encoding_is_built_from_tiktokens_own_definition(name, bundled, monkeypatch):
    """Same pattern, special tokens and file hash as tiktoken_ext.openai_public, so no drift goes unseen."""
    ours = bundled.get(name)
    seen: dict[str, str] = {}

    def load_tiktoken_bpe(url: str, expected_hash: str) -> dict[bytes, int]:
        seen["hash"] = expected_hash
        return ours._mergeable_ranks

    monkeypatch.setattr(openai_public, "load_tiktoken_bpe", load_tiktoken_bpe)
    official = openai_public.ENCODING_CONSTRUCTORS[name]()
    assert ours._pat_str == official["pat_str"]
    assert ours._special_tokens == official["special_tokens"]
    assert seen["hash"] == tokens._SHA256[name]


def copy_bundled(tmp_path: Path, tamper: bool) -> Path:
    """A copy of bpe-openai's o200k file; tampered means one byte of the BPE data flipped."""
    packed = (BUNDLED / "o200k_base.tiktoken.gz").read_bytes()
    if tamper:
        data = bytearray(gzip.decompress(packed))
        data[1000] ^= 0x01
        packed = gzip.compress(bytes(data), compresslevel=1)
    (tmp_path / "o200k_base.tiktoken.gz").write_bytes(packed)
    return tmp_path


def test_verified_copy_of_the_bundled_file_loads_from_any_folder(tmp_path, o200k):
    loaded = EncodingLoader(data_dir=copy_bundled(tmp_path, tamper=False), fallback=None).get("o200k_base")
    assert loaded.encode("hello world") == [24912, 2375]


def test_tampered_file_is_rejected_and_tiktoken_is_tried_with_one_warning(tmp_path, caplog, bundled):
    stand_in = object()
    calls: list[str] = []

    def fallback(name: str):
        calls.append(name)
        return stand_in

    loader = EncodingLoader(data_dir=copy_bundled(tmp_path, tamper=True), fallback=fallback)
    with caplog.at_level(logging.WARNING, logger=tokens.__name__):
        assert loader.get("o200k_base") is stand_in
        assert loader.get("o200k_base") is stand_in
    assert calls == ["o200k_base"]
    assert len(caplog.records) == 1
    assert "sha256" in caplog.text and "reinstall bpe-openai" in caplog.text


@pytest.mark.parametrize("content", [None, b"not gzip at all", gzip.compress(b"truncated")[:-6]])
def test_missing_or_broken_file_offline_gives_no_encoding_and_says_why_once(tmp_path, caplog, content):
    if content is not None:
        (tmp_path / "o200k_base.tiktoken.gz").write_bytes(content)
    loader = EncodingLoader(data_dir=tmp_path, fallback=offline)
    with caplog.at_level(logging.WARNING, logger=tokens.__name__):
        assert loader.get("o200k_base") is None
        assert loader.get("o200k_base") is None
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert "cannot read" in message and "ConnectionError" in message and "monad-notebook[local]" in message


def test_concurrent_first_use_loads_the_encoding_once(tmp_path):
    calls: list[str] = []
    stand_in = object()

    def slow_fallback(name: str):
        calls.append(name)
        time.sleep(0.05)
        return stand_in

    loader = EncodingLoader(data_dir=tmp_path, fallback=slow_fallback)
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: loader.get("o200k_base"), range(8)))
    assert calls == ["o200k_base"]
    assert all(result is stand_in for result in results)


def test_module_level_encoding_is_shared_across_calls(bundled):
    assert get_encoding("o200k_base") is get_encoding("o200k_base")
    assert get_encoding("o200k_base").encode("hello world") == [24912, 2375]


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini-2024-07-18", "o200k_base"),
        ("openai/gpt-4.1-mini", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("gpt-5.1-codex", "o200k_base"),
        ("o1", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("o4-mini", "o200k_base"),
        ("chatgpt-4o-latest", "o200k_base"),
        ("ft:gpt-4o-mini:acme::abc123", "o200k_base"),
        ("GPT-4o", "o200k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4-turbo", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("gpt-35-turbo", "cl100k_base"),
        ("text-embedding-3-small", "cl100k_base"),
        ("llama3.1:8b", None),
        ("qwen2.5-coder", None),
        ("scripted", None),
        ("o3pro", None),
        ("omni-moderation", None),
    ],
)
def test_maps_models_to_their_encoding(model, expected):
    assert encoding_name_for(model) == expected


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("The quick brown fox jumps over the lazy dog. " * 40, "prose"),
        (prose_sample(5000), "prose"),
        (inspect.getsource(json.decoder), "code"),
        ("function add(a, b) {\n  const sum = a + b;\n  return sum;\n}\n" * 20, "code"),
        (json.dumps(records(30), indent=2), "json"),
        (json.dumps(records(30)), "json"),
        (json.dumps(records(60), indent=2)[2000:6000], "json"),
        (frame(50).to_csv(index=False), "table"),
        (frame(50).to_csv(index=False, sep="\t"), "table"),
        (repr(frame(200)), "table"),
        ("| region | units | revenue |\n|---|---|---|\n" + "| North | 12 | 3400.50 |\n" * 20, "table"),
        ("", "prose"),
    ],
    ids=[
        "plain",
        "docs",
        "python",
        "javascript",
        "json",
        "compact-json",
        "json-slice",
        "csv",
        "tsv",
        "df-repr",
        "md-table",
        "empty",
    ],
)
def test_classifies_common_tool_outputs(text, kind):
    assert classify(text) == kind


def test_classify_looks_only_at_the_start_of_huge_text():
    text = prose_sample(6000) + frame(20000).to_csv()
    started = time.perf_counter()
    assert classify(text) == "prose"
    assert time.perf_counter() - started < 0.05


@pytest.mark.parametrize(
    "kind",
    ["prose", "code", "json", "csv", "df-repr"],
)
def test_ratio_estimate_stays_within_25_percent_of_exact_counts(kind, o200k):
    text = {
        "prose": prose_sample,
        "code": code_sample,
        "json": lambda: json.dumps(records(400), indent=2),
        "csv": lambda: frame(1500).to_csv(index=False),
        "df-repr": lambda: frame(1500).to_string(),
    }[kind]()
    exact = len(o200k.encode_ordinary(text))
    estimate = TokenCounter("llama3.1:8b", loader=no_encoding).count_text(text)
    assert abs(estimate - exact) / exact < 0.25


def test_ratio_estimate_charges_non_latin_scripts_by_bytes_not_chars(o200k):
    text = "北京是中华人民共和国的首都，是全国的政治中心、文化中心，是世界著名古都和现代化国际城市。" * 50
    exact = len(o200k.encode_ordinary(text))
    by_chars = len(text) / CHARS_PER_TOKEN["prose"]
    estimate = TokenCounter("qwen2.5", loader=no_encoding).count_text(text)
    assert abs(estimate - exact) / exact < 0.25 < abs(by_chars - exact) / exact


def test_counts_exactly_with_the_models_own_encoding(o200k, bundled):
    counter = TokenCounter("gpt-4o", loader=bundled.get)
    text = code_sample()
    assert counter.exact
    assert counter.count_text(text) == len(o200k.encode_ordinary(text))
    assert counter.count_text("<|endoftext|>") == 7


def test_unknown_models_count_with_o200k_as_a_proxy_but_not_exact(o200k, bundled):
    counter = TokenCounter("llama3.1:8b", loader=bundled.get)
    assert not counter.exact
    assert counter.count_text("hello world, how are you?") == len(o200k.encode("hello world, how are you?"))


def test_counter_loads_no_encoding_until_it_counts():
    asked: list[str] = []

    def loader(name: str) -> None:
        asked.append(name)

    counter = TokenCounter("gpt-4", loader=loader)
    assert asked == []
    counter.count_text("hello")
    counter.count_text("world")
    assert asked == ["cl100k_base"]


def test_counts_a_megabyte_quickly_and_huge_text_by_sampling(o200k, bundled):
    counter = TokenCounter("gpt-4o", loader=bundled.get)
    text = (prose_sample() + "\n" + code_sample()) * 40
    megabyte = text[:1_000_000]
    started = time.perf_counter()
    counter.count_text(megabyte)
    assert time.perf_counter() - started < 2.0
    huge = text[:2_200_000]
    assert abs(counter.count_text(huge) - len(o200k.encode_ordinary(huge))) / len(o200k.encode_ordinary(huge)) < 0.03


COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain"
        " English.",
    },
    {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
    {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased"
        " leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean for the client deliverable.",
    },
]


def test_reproduces_the_prompt_tokens_openai_reported_for_gpt_4(bundled):
    """OpenAI's token-counting cookbook sent this conversation to gpt-4; the API reported 129 prompt tokens."""
    assert TokenCounter("gpt-4", loader=bundled.get).count_messages(COOKBOOK_MESSAGES) == 129


def tool_round(arguments: str, result: str) -> list[dict]:
    return [
        {"role": "system", "content": "You are a data assistant."},
        {"role": "user", "content": "Load sales.csv"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "run_python", "arguments": arguments}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": result},
    ]


def test_count_messages_includes_tool_call_arguments_results_and_schemas(bundled):
    counter = TokenCounter("gpt-4o", loader=bundled.get)
    small_args, big_args = json.dumps({"code": "1"}), json.dumps({"code": code_sample()[:5000]})
    result = frame(30).to_string()
    base = counter.count_messages(tool_round(small_args, "ok"))
    assert counter.count_messages(tool_round(big_args, "ok")) - base == counter.count_text(
        big_args
    ) - counter.count_text(small_args)
    assert counter.count_messages(tool_round(small_args, result)) - base == counter.count_text(
        result
    ) - counter.count_text("ok")
    schema = [
        {
            "type": "function",
            "function": {
                "name": "run_python",
                "description": "Run Python code in the user's kernel and return its output.",
                "parameters": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]},
            },
        }
    ]
    with_tools = counter.count_messages(tool_round(small_args, "ok"), tools=schema)
    assert with_tools - base == counter.count_text(json.dumps(schema, separators=(",", ":")))


def test_count_messages_handles_multimodal_and_empty_content(bundled):
    counter = TokenCounter("gpt-4o", loader=bundled.get)
    text_only = [{"role": "user", "content": "What is in this plot?"}]
    with_image = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this plot?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
            ],
        }
    ]
    assert counter.count_messages(with_image) > counter.count_messages(text_only) + 500
    assert counter.count_messages([{"role": "assistant", "content": None}]) > 0


def test_effective_input_tokens_prefers_the_providers_count():
    assert effective_input_tokens(12_000, estimate=9_000) == 12_000
    assert effective_input_tokens(None, estimate=9_000) == 9_000
    assert effective_input_tokens(0, estimate=9_000) == 9_000
