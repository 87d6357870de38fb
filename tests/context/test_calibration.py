"""Occupancy against a provider that counts differently: the fit, its persistence, and the parts adding up."""

from __future__ import annotations

import json

import pytest

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.context.occupancy.calibration import KEPT, Calibration
from monad_notebook.testing import FakeOpenAIServer, tool_call

SENTENCES = [
    "The northern stores grew revenue in every quarter, led by the outlet near the harbour.",
    "Check the spreadsheet for missing values in the region column before plotting anything.",
    "Summarise the churn numbers by cohort and say which month looks out of line with the rest.",
    "Our forecast assumed flat prices; rerun it with a three percent increase from March onwards.",
    "List the five slowest queries from yesterday's log and the tables each of them touches.",
]


def schema_tokens(tools: list[dict]) -> int:
    """A provider that puts the schemas in the prompt, at its own rate."""
    return len(json.dumps(tools)) // 4


def server_for(counts_tools: bool) -> FakeOpenAIServer:
    """The default fake counts JSON characters / 4: another tokenizer and framing than ours."""
    return FakeOpenAIServer(count_tools=schema_tokens if counts_tools else None)


def session_on(server: FakeOpenAIServer, store, name: str = "calib") -> Session:
    config = Config.model_validate({"models": {"main": {"model": "local-model", "baseUrl": server.base_url}}})
    return Session(name, config=config, store=store, namespace={})


def converse(session: Session, server: FakeOpenAIServer, turns: int, start: int = 0) -> list[float]:
    """Ask ``turns`` questions; the relative error of the estimate the inspector showed, per request."""
    errors = []
    for i in range(start, start + turns):
        server.queue(f"Answer {i}: " + SENTENCES[(i + 2) % len(SENTENCES)] * (1 + i % 3))
        session.ask(f"Question {i}: " + SENTENCES[i % len(SENTENCES)] * (1 + i % 2))
        record = session.prompt_records[-1]
        errors.append(abs(record["total_tokens"] - record["real_tokens"]) / record["real_tokens"])
    return errors


# the fit


def fed(truth, requests: list[tuple[int, int]]) -> tuple[Calibration, list[float]]:
    calibration, errors = Calibration(), []
    for messages, tools in requests:
        real = truth(messages, tools)
        errors.append(abs(calibration.predict(messages, tools) - real) / real)
        calibration.observe(messages, tools, real)
    return calibration, errors


GROWING = [(140, 1082), (200, 1082), (260, 1082), (330, 1082), (420, 1082)]


@pytest.mark.parametrize(
    "truth",
    [
        pytest.param(lambda m, t: round(1.15 * m - 2), id="schemas-dropped"),
        pytest.param(lambda m, t: round(0.9 * m + 12), id="schemas-dropped-fewer-tokens"),
        pytest.param(lambda m, t: round(1.2 * (m + t)), id="schemas-counted"),
        pytest.param(lambda m, t: round(m + t + 40), id="fixed-template-overhead"),
    ],
)
def test_after_two_observed_requests_the_next_estimate_is_within_5_percent(truth):
    _, errors = fed(truth, GROWING)
    assert max(errors[2:]) < 0.05


def test_a_server_that_drops_tool_schemas_is_learnt_as_giving_them_no_weight():
    calibration, _ = fed(lambda m, t: round(1.15 * m), GROWING)
    assert calibration.fit.tools_weight < 0.05
    assert abs(calibration.fit.ratio - 1.15) < 0.05


def test_one_odd_count_cannot_push_the_fit_out_of_range():
    calibration = Calibration()
    calibration.observe(100, 0, 1_000_000)
    calibration.observe(120, 0, 1)
    assert 0.25 <= calibration.fit.ratio <= 4.0 and 0.0 <= calibration.fit.tools_weight <= 4.0
    assert calibration.predict(100, 0) >= 0


def test_only_the_last_few_observations_are_kept_and_empty_counts_are_ignored():
    calibration = Calibration()
    calibration.observe(100, 10, 0)
    calibration.observe(0, 10, 100)
    assert calibration.observations == [] and not calibration.dirty
    for i in range(KEPT + 3):
        calibration.observe(100 + i, 10, 120 + i)
    assert len(calibration.observations) == KEPT and calibration.observations[-1] == (110, 10, 130)


MALFORMED = [None, {}, {"observations": "x"}, {"observations": [[1, 2], ["a", 2, 3], [5.5, 1, 1]]}]


@pytest.mark.parametrize("data", MALFORMED)
def test_a_malformed_stored_calibration_starts_from_the_raw_count(data):
    assert Calibration.from_dict(data).predict(100, 50) == 150


def test_a_calibration_round_trips_through_its_stored_form():
    calibration, _ = fed(lambda m, t: round(1.15 * m), GROWING)
    again = Calibration.from_dict(json.loads(json.dumps(calibration.to_dict())))
    assert again.fit == calibration.fit and not again.dirty


# in a session, through real HTTP


@pytest.mark.parametrize("counts_tools", [False, True], ids=["schemas-dropped", "schemas-counted"])
def test_the_estimate_matches_the_providers_count_after_two_requests(store, counts_tools):
    with server_for(counts_tools) as server:
        session = session_on(server, store)
        errors = converse(session, server, 5)
    if not counts_tools:
        assert errors[0] > 1.0  # over 1,000 tokens of schemas the server never counted
    assert max(errors[2:]) < 0.05


@pytest.mark.parametrize("counts_tools", [False, True], ids=["schemas-dropped", "schemas-counted"])
def test_a_new_session_on_the_same_store_estimates_its_first_request_within_5_percent(store, counts_tools):
    with server_for(counts_tools) as server:
        converse(session_on(server, store), server, 3)
        restarted = session_on(server, store)
        errors = converse(restarted, server, 1, start=3)
    assert errors[0] < 0.05


def test_a_new_session_starts_from_what_another_session_learnt_for_the_same_model(store):
    with server_for(False) as server:
        converse(session_on(server, store, "first"), server, 3)
        errors = converse(session_on(server, store, "second"), server, 1)
    assert errors[0] < 0.1


def test_status_after_a_restart_is_in_the_providers_units(store):
    with server_for(False) as server:
        session = session_on(server, store)
        converse(session, server, 3)
        real = session.prompt_records[-1]["real_tokens"]
        occupancy = session_on(server, store).status()["occupancy"]
    assert abs(occupancy - real) / real < 0.25  # the window grew by one answer since that count


@pytest.mark.lance
def test_what_was_learnt_is_saved_in_one_small_write_per_turn_and_not_without_a_count(store):
    with server_for(False) as server:
        session = session_on(server, store)
        converse(session, server, 1)
        before = store.tables.table_version("calibrations")
        server.queue(tool_call("list_files", {}), "two requests, one turn")
        session.ask("look around")
        assert store.tables.table_version("calibrations") == before + 1
        server.report_usage = False
        server.queue("no usage reported")
        session.ask("again")
        assert store.tables.table_version("calibrations") == before + 1


def test_prompt_parts_add_up_to_the_headline_and_show_the_schemas_the_server_dropped(store):
    with server_for(False) as server:
        session = session_on(server, store)
        converse(session, server, 3)
    record = session.prompt_records[-1]
    assert sum(p["tokens"] for p in record["parts"]) == record["total_tokens"]
    tools = next(p for p in record["parts"] if p["kind"] == "tools")
    assert tools["tokens"] < 0.05 * record["total_tokens"]
