from __future__ import annotations

import json

import pytest

from benchmarks.reference_trace import PrefixMeter, measure_overhead, replay_tool, run_strategies, strategy_tables
from benchmarks.trace import generate_trace, replay_events
from monad_notebook.agent.tools.base import ToolContext
from monad_notebook.context.occupancy.tokens import TokenCounter

STEPS = 20
WINDOW = 16_000


@pytest.fixture(scope="module")
def replayed():
    return run_strategies(STEPS, WINDOW)


def trace_text(trace) -> str:
    parts = []
    for turn in trace.turns:
        parts += [turn.user, turn.answer]
        parts += [f"{s.note}\n{json.dumps(s.code)}\n{s.code}\n{s.output}" for s in turn.steps]
    return "\n".join(parts)


def test_trace_is_deterministic_and_plants_each_identifier_once_in_the_first_steps():
    trace = generate_trace(STEPS)
    assert trace_text(trace) == trace_text(generate_trace(STEPS))
    assert len({p.value for p in trace.planted}) == len(trace.planted) == 20
    text = trace_text(trace)
    for plant in trace.planted:
        assert text.count(plant.value) in (1, 2), plant.value  # code appears raw and JSON-quoted
        assert plant.step <= 17


def test_every_step_is_preceded_by_a_request_and_each_turn_ends_with_an_answer():
    trace = generate_trace(STEPS)
    kinds = [kind for kind, _ in replay_events(trace)]
    assert kinds.count("step") == STEPS
    assert kinds.count("user") == kinds.count("answer") == len(trace.turns)
    assert kinds[0] == "user" and kinds[-1] == "answer"


def test_replay_tool_returns_the_recorded_output_of_the_step_it_is_asked_for(tmp_path):
    trace = generate_trace(STEPS)
    replay = replay_tool(trace)
    ctx = ToolContext(session="s", namespace={}, root=tmp_path)
    assert replay.run(ctx, {"step": 3, "code": "x"}) == trace.steps[2].output
    assert replay.schema()["function"]["name"] == "replay"


def test_prefix_meter_counts_only_what_follows_the_prefix_shared_with_the_previous_request():
    counter = TokenCounter("gpt-4o")
    system = {"role": "system", "content": "You help."}
    first = [system, {"role": "user", "content": "load data/raw/sales.csv"}]
    grown = [*first, {"role": "assistant", "content": "Loaded 4,812 rows."}]
    edited = [system, {"role": "user", "content": "[cleared]"}, grown[2]]
    meter = PrefixMeter(counter, [])
    total = counter.count_messages
    assert meter.new_tokens(first, total(first)) == total(first)
    assert meter.new_tokens(grown, total(grown)) == total(grown) - total(first)
    assert meter.new_tokens(edited, total(edited)) == total(edited) - total([system])


def test_all_strategies_see_the_same_requests_and_sending_everything_costs_the_most(replayed):
    trace, results = replayed
    by_name = {r.name: r for r in results}
    everything = by_name["none (send everything)"]
    simulated = [r for r in results if not r.name.startswith("monad")]
    assert {r.requests for r in simulated} == {STEPS + len(trace.turns)}
    assert all(everything.tokens_sent >= r.tokens_sent for r in results)
    assert everything.overflows > 0
    assert set(everything.found.values()) == {"window"}
    assert all(r.peak <= r.tokens_sent for r in results)


def test_only_the_summarizing_strategies_make_summary_calls(replayed):
    _, results = replayed
    by_name = {r.name: r for r in results}
    assert by_name["summarize-only"].summary_calls > 0
    assert by_name["summarize-only"].summary_input > 0
    assert by_name["none (send everything)"].summary_calls == 0
    assert by_name["LangChain ClearToolUsesEdit + trim_messages"].summary_calls == 0


def test_cleared_langchain_results_are_not_counted_as_recoverable(replayed):
    trace, results = replayed
    langchain = next(r for r in results if r.name.startswith("LangChain"))
    assert langchain.outputs_recoverable < len(trace.steps)
    assert "handle" not in langchain.found.values()


def test_a_refused_request_is_compacted_and_retried_so_no_turn_fails(replayed):
    trace, results = replayed
    monad = next(r for r in results if r.name.startswith("monad"))
    assert monad.failed_turns == 0
    assert monad.requests - monad.overflows == STEPS + len(trace.turns)


def test_the_cascade_keeps_more_outputs_readable_than_clearing_them(replayed):
    _, results = replayed
    monad = next(r for r in results if r.name.startswith("monad"))
    langchain = next(r for r in results if r.name.startswith("LangChain"))
    assert monad.summary_calls > 0
    assert monad.outputs_recoverable > langchain.outputs_recoverable
    assert "handle" in monad.found.values()


def test_tables_name_every_strategy_and_every_planted_identifier(replayed):
    trace, results = replayed
    table = strategy_tables(trace, results, WINDOW)
    for result in results:
        assert f"| {result.name} |" in table
    for plant in trace.planted:
        assert f"`{plant.value}`" in table


def test_overhead_is_measured_on_a_window_bounded_by_the_summary():
    measured = measure_overhead(400, 4)
    assert 0 < measured["window"] <= 24
    assert 0 < measured["p50"] <= measured["max"]
