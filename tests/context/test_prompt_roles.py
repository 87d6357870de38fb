"""Where the blocks that end a request ride: a template that insists on alternating roles takes every position.

The template is the strict one the real-server tests start llama-server with (``tests/chat_template.py``),
rendered here; the cache check compares the text two steps' requests render to.
"""

from __future__ import annotations

import pytest

from monad_notebook.context.prompt import PLAN_NOTE, assemble, count_parts
from monad_notebook.images.image import Image
from monad_notebook.messages import Message, ToolCall
from tests.chat_template import TemplateRefused, render

WORKSPACE = "<workspace>\nThe kernel holds:\n- sales: DataFrame 3 rows x 2 cols [region, amount]\n</workspace>"
PLAN = "## Next Step\nplot the growth"
PLANNED = f"<plan>\n{PLAN_NOTE}\n{PLAN}\n</plan>"
CALLS = [ToolCall("call_000000001", "describe", '{"name": "sales"}'), ToolCall("call_000000002", "list_files", "{}")]


def question(text: str = "Which region grew fastest?") -> Message:
    return Message(role="user", content=text)


def called() -> list[Message]:
    """The assistant's two parallel calls and their results."""
    return [
        Message(role="assistant", content="", tool_calls=CALLS),
        Message(role="tool", content="sales: 3 rows", tool_call_id="call_000000001", name="describe"),
        Message(role="tool", content="sales.csv", tool_call_id="call_000000002", name="list_files"),
    ]


def earlier_turn() -> list[Message]:
    return [question("Load the sales."), *called(), Message(role="assistant", content="Loaded.")]


POSITIONS = {
    "after the user's message at the start of a turn": (None, [*earlier_turn(), question()]),
    "after tool results mid-turn": (None, [*earlier_turn(), question(), *called()]),
    "with the summary folded into the turn's only message": ("## Objective\nforecast", [question()]),
    "after a summary that opens a window starting mid-exchange": ("## Objective\nforecast", called()),
    "after the assistant's answer": (None, earlier_turn()),
    "with no message at all": (None, []),
}


def prompt_for(summary: str | None, window: list[Message], **options):
    return assemble(
        system="sys", memory="", summary=summary, window=window, tools=[], plan=PLAN, workspace=WORKSPACE, **options
    )


@pytest.mark.parametrize("position", POSITIONS)
def test_a_template_that_insists_on_alternating_roles_takes_the_request_in_every_position(position):
    summary, window = POSITIONS[position]
    messages = prompt_for(summary, window).messages
    rendered = render(messages)
    assert rendered.endswith("<|im_start|>assistant\n") and rendered.count(WORKSPACE) == 1
    assert sum("<plan>" in str(m["content"]) for m in messages) == 1


def test_at_the_start_of_a_turn_the_blocks_follow_the_question_in_its_own_message():
    prompt = prompt_for(None, [*earlier_turn(), question()])
    assert prompt.messages[-1] == {"role": "user", "content": f"Which region grew fastest?\n\n{PLANNED}\n\n{WORKSPACE}"}


def test_mid_turn_the_blocks_follow_the_last_result_and_each_result_still_answers_its_call():
    prompt = prompt_for(None, [question(), *called()])
    assert [m["role"] for m in prompt.messages] == ["system", "user", "assistant", "tool", "tool"]
    assert prompt.messages[-2] == {"role": "tool", "content": "sales: 3 rows", "tool_call_id": "call_000000001"}
    last = {"role": "tool", "content": f"sales.csv\n\n{PLANNED}\n\n{WORKSPACE}", "tool_call_id": "call_000000002"}
    assert prompt.messages[-1] == last


def test_the_images_a_round_displayed_and_the_blocks_are_one_user_message_after_its_results():
    chart = Image("img_0123456789", "image/png", 4, 3, b"png", "sales by region")
    window = [question(), *called()]
    window[-1].images = [chart]
    prompt = prompt_for(None, window, image_detail="low")
    assert [m["role"] for m in prompt.messages] == ["system", "user", "assistant", "tool", "tool", "user"]
    content = prompt.messages[-1]["content"]
    assert [part["type"] for part in content] == ["text", "text", "image_url", "text", "text"]
    assert [part.get("text") for part in content[-2:]] == [PLANNED, WORKSPACE]


def test_each_block_is_still_a_part_of_its_own_named_for_the_message_it_rides_on():
    prompt = prompt_for(None, [question(), *called()])
    count_parts(prompt, lambda m: 5, len, lambda image, detail: 0)
    parts = prompt.record(turn=1, step=2, total=200, tools_tokens=0)["parts"]
    assert [(p["kind"], p["role"]) for p in parts[-4:]] == [
        ("tool_result", "tool"),
        ("tool_result", "tool"),
        ("plan", "tool"),
        ("workspace", "tool"),
    ]
    assert parts[-1]["text"] == WORKSPACE


def test_the_next_steps_request_repeats_every_character_before_the_blocks():
    """What the provider cached of a step is all of it up to the blocks, as when they were a message of their own."""
    window = [*earlier_turn(), question()]
    first = render(prompt_for(None, window).messages)
    window += called()
    second = render(prompt_for(None, window).messages)
    kept = first[: first.index(f"\n\n{PLANNED}")]
    assert kept.endswith("Which region grew fastest?") and second.startswith(kept)
    third = render(prompt_for(None, [*window, *called()]).messages)  # a later step: the results above unchanged
    assert third.startswith(second[: second.index(f"\n\n{PLANNED}")])


def test_two_user_messages_in_a_row_are_what_the_strict_template_refuses():
    """The template is as strict as the real ones: the shape requests had before is refused."""
    with pytest.raises(TemplateRefused, match="roles must alternate user/assistant"):
        render([{"role": "user", "content": "q"}, {"role": "user", "content": WORKSPACE}])
    with pytest.raises(TemplateRefused, match="roles must alternate user/assistant"):
        render([{"role": "user", "content": "q"}, *[m.to_openai() for m in called()], {"role": "user", "content": "x"}])
