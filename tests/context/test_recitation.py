from __future__ import annotations

from monad_notebook.context.prompt import PLAN_NOTE, assemble
from monad_notebook.context.recitation import plan_body
from monad_notebook.messages import Message

SUMMARY = """\
## Objective
Find the fastest-growing region.

## Decisions & Facts
- Use polars.

## Files & State
- data/sales.csv loaded as `df`

## Open Tasks
- compare Q3 vs Q2 by region
- check the EMEA outlier

## Next Step
Plot growth per region.
"""


def test_anchor_pins_open_tasks_and_next_step_only() -> None:
    prompt = assemble(system="s", memory="", summary=None, window=[], tools=[], plan=plan_body(SUMMARY))
    assert prompt.messages[-1]["content"] == (
        f"<plan>\n{PLAN_NOTE}\n"
        "## Open Tasks\n- compare Q3 vs Q2 by region\n- check the EMEA outlier\n\n"
        "## Next Step\nPlot growth per region.\n"
        "</plan>"
    )


def test_no_anchor_without_a_summary() -> None:
    assert plan_body(None) is None
    assert plan_body("") is None


def test_no_anchor_when_both_sections_are_absent_or_empty() -> None:
    assert plan_body("## Objective\nExplore.\n\n## Decisions & Facts\nUse polars.") is None
    assert plan_body("## Open Tasks\n\n## Next Step\n   \n") is None
    assert plan_body("## Open Tasks\n- None\n\n## Next Step\nNone.") is None
    assert plan_body("Open Tasks: compare regions (prose, not a section)") is None


def test_one_section_is_enough() -> None:
    assert plan_body("## Objective\nExplore.\n\n## Next Step\nLoad the data.") == "## Next Step\nLoad the data."


def test_headings_match_without_case_and_subheadings_stay_in_the_body() -> None:
    body = plan_body("## open tasks\n### data\n- load it\n## NEXT STEP ##\nload")
    assert body == "## Open Tasks\n### data\n- load it\n\n## Next Step\nload"


def test_only_the_plan_sections_are_pinned_whatever_their_order() -> None:
    body = plan_body("## Next Step\nplot\n## Objective\nexplore\n## Open Tasks\n- compare")
    assert body == "## Open Tasks\n- compare\n\n## Next Step\nplot"


def test_the_prompt_ends_with_the_same_anchor_the_session_passes_as_plan() -> None:
    window = [Message(role="user", content="next?")]
    prompt = assemble(system="sys", memory="", summary=SUMMARY, window=window, tools=[], plan=plan_body(SUMMARY))
    plan = f"<plan>\n{PLAN_NOTE}\n{plan_body(SUMMARY)}\n</plan>"
    assert prompt.messages[-1] == {"role": "user", "content": f"<summary>\n{SUMMARY}\n</summary>\n\nnext?\n\n{plan}"}
