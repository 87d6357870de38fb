"""The fidelity benchmark counts only what a model that forgot an identifier can reach."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from benchmarks.fidelity import MAX_CHARS, FastModel, prompt_text, report, run
from benchmarks.fidelity_session import (
    HELD_ASPECTS,
    HELD_ENTITIES,
    KINDS,
    PLACEMENTS,
    PROBES,
    REWORDED_ASPECTS,
    REWORDED_ENTITIES,
    make_script,
)
from monad_notebook.context.compaction.summarize import parse_sections
from monad_notebook.context.lossless.truncation import truncate_tool_output
from monad_notebook.context.recall.dates import named_months
from monad_notebook.context.recall.search import STEPS

pytestmark = pytest.mark.filterwarnings(r"ignore:optimize\(cleanup_older_than=0\):UserWarning")


def test_no_probe_names_a_month_so_dated_first_leaves_the_figures_as_they_are():
    script = make_script()  # recall is asked only the probes: the related-context block is off
    asked = [q for p in script.plants for q in (p.probe, p.held_out, p.reworded)]

    assert len(asked) == 300
    assert not [q for q in asked if named_months(q)]


def test_every_identifier_is_planted_once_with_a_probe_that_does_not_name_it():
    script = make_script(60)
    text = script.text()

    assert len(script.plants) == 100
    assert all(text.count(p.value) == 1 for p in script.plants)
    assert all(p.value not in p.probe and p.value.lower() not in p.probe.lower() for p in script.plants)
    assert Counter(p.kind for p in script.plants) == dict.fromkeys(KINDS, 20)
    assert Counter(p.placement for p in script.plants) == dict.fromkeys(PLACEMENTS, 25)
    assert 30 <= sum(p.paraphrased for p in script.plants) <= 40
    assert make_script(60).text() == text


def test_each_identifier_has_a_held_out_probe_in_other_words_and_forms():
    script = make_script(60)
    tuning_openings = {t.split("{}")[0] for t in PROBES.values()}
    held = [p.held_out for p in script.plants]

    assert all(h and p.value.lower() not in h.lower() for h, p in zip(held, script.plants, strict=True))
    assert not any(h.startswith(opening) for h in held for opening in tuning_openings)
    kind_words = ("file", "variable", "column", "command")
    unnamed = [p for p in script.plants if p.kind != "command" and not any(w in p.held_out for w in kind_words)]
    assert len(unnamed) >= 25  # many name no kind, or another word for it
    assert all(p.held_out.startswith(("how did we", "what did I use")) for p in script.plants if p.kind == "command")
    assert any(p.held_out.startswith(("what did you tell me", "you mentioned")) for p in script.plants)
    assert not any(p.subject in p.held_out for p in script.plants)  # the thing itself is named otherwise too


def test_the_second_tuning_probes_ask_in_words_of_their_own_none_the_held_out_probes_use():
    script = make_script(60)
    held_words = {w for v in (*HELD_ENTITIES.values(), *HELD_ASPECTS.values()) for w in v.split()}
    own_words = {w for v in (*REWORDED_ENTITIES.values(), *REWORDED_ASPECTS.values()) for w in v.split()}

    assert held_words & own_words <= {"the", "of"}
    assert all(p.reworded and p.value.lower() not in p.reworded.lower() for p in script.plants)
    assert not any(p.subject in p.reworded for p in script.plants)
    assert len({p.reworded for p in script.plants}) == 100


def test_planted_output_middles_are_hidden_by_truncation_and_small_outputs_are_not():
    script = make_script(60)
    outputs = {s.call_id: s.output for t in script.turns for s in t.steps}
    for plant in (p for p in script.plants if p.call_id):
        shown = truncate_tool_output(outputs[plant.call_id], tool_call_id="x", max_chars=MAX_CHARS, recoverable=True)
        if plant.placement == "output-middle":
            assert plant.value not in shown
        elif plant.placement == "small-output":
            assert shown == outputs[plant.call_id]


def test_the_scripted_summarizers_write_the_briefing_their_quality_says():
    request = [
        {"role": "system", "content": "... at most about 1500 tokens."},
        {
            "role": "user",
            "content": "<transcript>\nUSER: The churn raw extract is at data/raw/c.parquet.\n</transcript>",
        },
    ]

    good = FastModel("good").complete(request, []).content
    weak = FastModel("weak").complete(request, []).content

    assert len(parse_sections(good)) == 5 and "data/raw/c.parquet" in good
    assert len(parse_sections(weak)) == 5 and "data/raw/c.parquet" not in weak
    with pytest.raises(Exception, match="down"):
        FastModel("failing").complete(request, [])


def test_a_short_run_counts_each_identifier_only_where_it_really_is(tmp_path):
    script = make_script(10)

    result = run(script, "failing", 16_000, tmp_path, ablate=True)

    assert result.compactions >= 1 and result.fallbacks == result.compactions
    assert set(result.found) == {p.value for p in script.plants}
    assert all(where <= {"prompt", "handle", "recall"} for where in result.found.values())
    assert set(result.held) == set(result.reworded) == set(result.found)
    assert len(result.recall_ms) == 300  # the three probes of each identifier asked
    assert 0 < sum("recall" in w for w in result.found.values()) < 100
    assert sum("prompt" in w for w in result.found.values()) < 100
    assert max(result.recall_tokens) <= 1200
    table = report(script, [result])
    assert "| all |" in table and "| placed in: output-middle |" in table and "Held-out probes" in table
    assert list(result.ablation) == ["none", *STEPS]  # every step switched off in turn, on every probe set
    reached = tuple(sum(map(bool, found.values())) for found in (result.found, result.reworded, result.held))
    assert result.ablation["none"] == reached  # the benchmark's own Recall answers as the session's did
    in_prompt = sum(bool(w - {"recall"}) for w in result.found.values())
    assert all(in_prompt <= reach <= 100 for row in result.ablation.values() for reach in row)
    assert "| one_of_each |" in table
    # what the final window shows is in the prompt, and recall (which skips it) never counts for it
    assert result.windowed and all("prompt" in result.found[v] for v in result.windowed)
    assert not any(
        "recall" in found[v] for found in (result.found, result.reworded, result.held) for v in result.windowed
    )
    assert f"{len(result.windowed)} of the identifiers are shown by the final window's messages" in table


def test_prompt_text_reads_contents_and_tool_call_arguments():
    messages = [
        {"role": "user", "content": "hello"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "call_1", "function": {"name": "python", "arguments": json.dumps({"code": "x"})}}],
        },
    ]
    assert prompt_text(messages) == 'hello\n\ncall_1 {"code": "x"}'
