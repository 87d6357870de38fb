"""Prompt assembly: where the summary, the injected blocks and the plan land."""

from __future__ import annotations

import pytest

from monad_notebook.context.occupancy.cost import CachePricing, CostMeter
from monad_notebook.context.prompt import PLAN_NOTE, assemble, count_parts
from monad_notebook.context.window import Frame, Window
from monad_notebook.messages import Message, ToolCall
from monad_notebook.store.base import Summary


def window() -> list[Message]:
    call = ToolCall("c1", "read_file", "{}")
    return [
        Message(role="user", content="first question"),
        Message(role="assistant", content="", tool_calls=[call]),
        Message(
            role="tool", content="file text", tool_call_id="c1", name="read_file", placeholder="[context-cleared] x"
        ),
        Message(role="assistant", content="answer"),
        Message(role="user", content="latest question"),
    ]


def test_summary_is_folded_into_the_first_user_message_not_a_second_system_message():
    prompt = assemble(system="sys", memory="", summary="## Objective\nship it", window=window(), tools=[])
    roles = [m["role"] for m in prompt.messages]
    assert roles.count("system") == 1 and roles[1] == "user"
    assert prompt.messages[1]["content"] == "<summary>\n## Objective\nship it\n</summary>\n\nfirst question"


def test_related_context_rides_on_the_user_message_it_was_found_for_and_the_plan_follows_it_last():
    msgs = window()
    prompt = assemble(
        system="sys",
        memory="facts",
        summary="## Objective\nx",
        window=msgs,
        tools=[],
        related={
            msgs[0].id: "<related_context>a</related_context>",
            msgs[-1].id: "<related_context>b</related_context>",
        },
        plan="## Next Step\nplot it",
    )
    assert prompt.messages[0]["content"] == "sys\n\nfacts"
    first = "<summary>\n## Objective\nx\n</summary>\n\nfirst question\n\n<related_context>a</related_context>"
    assert prompt.messages[1]["content"] == first
    plan = f"<plan>\n{PLAN_NOTE}\n## Next Step\nplot it\n</plan>"
    assert prompt.messages[-1] == {
        "role": "user",
        "content": f"latest question\n\n<related_context>b</related_context>\n\n{plan}",
    }


def test_evicted_results_are_sent_as_placeholders_and_labelled_so():
    prompt = assemble(system="sys", memory="", summary=None, window=window(), tools=[])
    tool = next(m for m in prompt.messages if m["role"] == "tool")
    assert tool["content"] == "[context-cleared] x" and tool["tool_call_id"] == "c1"
    count_parts(prompt, lambda m: 7, len, lambda image, detail: 0)
    record = prompt.record(turn=1, step=1, total=3 + 5 * 7, tools_tokens=0)
    kinds = [p["kind"] for p in record["parts"]]
    assert kinds == ["tools", "system", "message", "message", "placeholder", "message", "message"]
    assert record["parts"][4]["tokens"] == 7


def test_a_records_parts_add_up_to_its_headline_whatever_the_calibration():
    prompt = assemble(system="sys", memory="", summary=None, window=window(), tools=[{"type": "function"}])
    count_parts(prompt, lambda m: 7, len, lambda image, detail: 0)
    for total, tools_tokens in ((1_333, 900), (461, 0), (38, 38), (7, 0)):
        record = prompt.record(turn=1, step=1, total=total, tools_tokens=tools_tokens)
        assert sum(p["tokens"] for p in record["parts"]) == total
        assert record["parts"][0]["tokens"] == tools_tokens
        assert min(p["tokens"] for p in record["parts"]) >= 0


def test_a_window_that_starts_mid_exchange_gets_the_summary_as_its_own_first_user_turn():
    msgs = window()[3:]  # starts with the assistant's answer
    prompt = assemble(system="sys", memory="", summary="## Objective\nx", window=msgs, tools=[])
    assert [m["role"] for m in prompt.messages] == ["system", "user", "assistant", "user"]
    assert prompt.messages[1]["content"] == "<summary>\n## Objective\nx\n</summary>"


def warm_window_with_three_blocks() -> tuple[Window, Message]:
    """Three turns, each with its related block, the provider's cache warm; and turn 1's tool result."""
    w, cost = Window("s"), CostMeter(CachePricing(0.1))
    call = ToolCall("c1", "python", "{}")
    result = Message(role="tool", content="out " * 200, tool_call_id="c1", name="python")
    turns = [
        [Message(role="user", content="q1"), Message(role="assistant", content="", tool_calls=[call]), result],
        [Message(role="assistant", content="a1"), Message(role="user", content="q2")],
        [Message(role="assistant", content="a2"), Message(role="user", content="q3")],
    ]
    for number, messages in enumerate(turns, 1):
        w.extend(messages)
        block = {"related_context": f"<related_context>{number}</related_context>"}
        w.set_blocks(block, messages[-1 if number > 1 else 0].id, cache_warm=cost.cache_warm())
        cost.add(1_000, 0)  # a request went out: the cache is warm for the next turn
    return w, result


def sent(w: Window) -> list[str]:
    return [m["content"] for m in w.prompt().messages]


def test_while_the_cache_is_warm_each_turns_related_block_stays_on_its_message():
    w, _ = warm_window_with_three_blocks()
    assert sent(w)[1] == "q1\n\n<related_context>1</related_context>"
    assert sent(w)[5] == "q2\n\n<related_context>2</related_context>"
    assert sent(w)[-1] == "q3\n\n<related_context>3</related_context>"


def test_an_eviction_pass_takes_the_related_blocks_after_the_first_result_it_clears_but_not_this_turns():
    w, result = warm_window_with_three_blocks()
    w.apply_eviction({result.id: "[context-cleared] python output"})
    shown = sent(w)
    assert shown[1] == "q1\n\n<related_context>1</related_context>"  # before the cleared result: its prefix holds
    assert shown[3].startswith("[context-cleared]") and shown[5] == "q2"
    assert shown[-1] == "q3\n\n<related_context>3</related_context>"


@pytest.mark.parametrize("change", ["a compaction", "a new memory block", "a new system prompt"])
def test_a_change_at_the_top_of_the_prompt_takes_the_earlier_blocks_with_it(change):
    w, _ = warm_window_with_three_blocks()
    if change == "a compaction":
        summary = Summary(session="s", text="## Objective\nx", boundary_seq=0, created_at=0.0)
        folded = [m.id for m in w.messages[:3]]
        w.apply_compaction(summary, folded)
    elif change == "a new memory block":
        w.set_blocks({"memory": "- a new fact"}, None)
    else:
        w.set_frame(Frame(system="another system prompt"))
    blocks = [text for text in sent(w) if "<related_context>" in str(text)]
    kept = ["q3\n\n<related_context>3</related_context>"] if change == "a compaction" else []  # mid-turn / next turn
    assert blocks == kept
