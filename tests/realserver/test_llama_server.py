"""The client against a real OpenAI-compatible server (llama.cpp's llama-server on SmolLM2-135M).

A check of the client, never of answer quality: the model is weak, makes no tool calls and
writes poor summaries. Answers are capped at a few tokens so that the tier stays fast.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from monad_notebook import Session
from monad_notebook import events as ev
from monad_notebook.config import Config
from monad_notebook.errors import ContextLengthError, EndpointError
from monad_notebook.provider import OpenAIChatModel
from monad_notebook.store.lance import LanceStore
from monad_notebook.testing.llama import LlamaServer

pytestmark = pytest.mark.slow

SYSTEM = "You are a helpful assistant. Answer briefly."
QUESTIONS = [
    "What is a good name for a cat?",
    "Give me three tips for writing clear Python functions.",
    "Summarise the plot of a detective story set in a lighthouse.",
    "List the planets of the solar system in order.",
    "Why do leaves change colour in autumn?",
]
PARAGRAPH = (
    "The quarterly report covers revenue, costs and headcount for the northern and southern regions, "
    "with notes on the new warehouse, the delayed product launch and the hiring plan for next year. "
)


def settings(
    server: LlamaServer, *, window: int | None = None, max_out: int = 8, vision: bool | str = "auto", **context: Any
) -> dict:
    """agents.json for this server: both tiers on it, short greedy answers, one retry, no embeddings.

    Greedy, so a run's answers do not vary: sampled at the server's default temperature, the
    model now and then began something the server's tool-call parser rejected mid-stream.
    """
    main = {
        "model": "smollm2",
        "baseUrl": server.base_url,
        "contextWindow": window or server.context,
        "maxOutputTokens": max_out,
        "maxRetries": 1,
        "temperature": 0,
        "vision": vision,
    }
    return {
        "models": {"main": main, "fast": main, "embedding": {"provider": "none"}},
        "agent": {"systemPrompt": SYSTEM},
        "context": context,
    }


def session_on(server: LlamaServer, store: LanceStore, name: str = "real", **options: Any) -> Session:
    return Session(name, config=Config.model_validate(settings(server, **options)), store=store, namespace={})


def consistent(session: Session, store: LanceStore) -> bool:
    """The in-memory window holds exactly what the store has after the summary boundary."""
    boundary = session.summary.boundary_seq if session.summary else -1
    stored = store.load_messages(session.name, after_seq=boundary)
    return [m.id for m in session.window.messages] == [m.id for m in stored]


def test_a_monad_cell_in_a_real_kernel_streams_the_servers_answer(llama, isolated_env: Path) -> None:
    from jupyter_client.manager import start_new_kernel

    (isolated_env / "agents.json").write_text(json.dumps(settings(llama, max_out=16)))
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(isolated_env), env=dict(os.environ))
    try:
        client.execute_interactive("%load_ext monad_notebook", timeout=120)
        updates: list[str] = []

        def seen(msg: dict) -> None:
            if msg["msg_type"] == "error":
                pytest.fail("\n".join(msg["content"]["traceback"]))
            if msg["msg_type"] in ("display_data", "update_display_data"):
                updates.append(msg["content"]["data"].get("text/markdown", ""))

        client.execute_interactive("%%monad\nSay hello to the team.", timeout=120, output_hook=seen)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    store = LanceStore(Path(os.environ["MONAD_HOME"]) / "db")
    answer = store.load_messages("default")[-1]
    store.close()
    assert answer.role == "assistant" and answer.content.strip()
    shown = [text for text in updates if answer.content.strip()[:20] in text]
    assert len(updates) >= 3 and shown  # the answer arrived in pieces (then the footer), and was shown whole


def test_occupancy_matches_the_servers_usage_after_two_requests_and_after_a_restart(llama, store) -> None:
    session = session_on(llama, store)
    errors = []
    for question in QUESTIONS[:4]:
        session.ask(question)
        record = session.prompt_records[-1]
        errors.append(abs(record["total_tokens"] - record["real_tokens"]) / record["real_tokens"])
    assert errors[0] > 1.0  # the tool schemas we count, the server leaves out
    assert max(errors[2:]) < 0.05
    restarted = session_on(llama, store)
    restarted.ask(QUESTIONS[4])
    record = restarted.prompt_records[-1]
    assert abs(record["total_tokens"] - record["real_tokens"]) / record["real_tokens"] < 0.05


def test_compaction_with_the_weak_real_summarizer_leaves_the_session_whole(llama, store) -> None:
    summarize = {"softFraction": 0.3, "hardFraction": 0.9, "keepRecent": 2, "background": False}
    session = session_on(llama, store, window=512, summarize=summarize)
    seen: list[ev.Event] = []
    session.events.subscribe(seen.append)
    for question in QUESTIONS[:4]:
        session.ask(f"{question} {PARAGRAPH}")  # about 60 tokens a turn: over 30% of 512 by the fourth
    finished = [e for e in seen if e.kind == ev.COMPACTION_FINISHED]
    assert finished, "no compaction ran"
    summary = store.load_summary("real")
    assert summary is not None and summary.text.strip()
    assert "<summary>" in session.prompt_records[-1]["parts"][2]["text"]  # the last request started from it
    assert consistent(session, store)


def test_a_server_overflow_maps_to_a_context_length_error(small_llama) -> None:
    model = OpenAIChatModel("smollm2", base_url=small_llama.base_url, max_output_tokens=4)
    with pytest.raises(ContextLengthError) as caught:
        model.complete([{"role": "user", "content": PARAGRAPH * 20}], [])
    assert "context" in str(caught.value) and "\n" not in str(caught.value)


def test_an_overflow_the_client_did_not_see_coming_compacts_and_retries(small_llama, store) -> None:
    session = session_on(
        small_llama, store, window=4096, summarize={"softFraction": 0.95, "hardFraction": 1.0, "keepRecent": 2}
    )
    seen: list[ev.Event] = []
    session.events.subscribe(seen.append)
    session.ask(f"Read this. {PARAGRAPH * 8}")  # about 320 of the server's 512 tokens
    session.ask(f"And this. {PARAGRAPH * 6}")  # about 570 with the first: refused by the server
    started = [e for e in seen if e.kind == ev.COMPACTION_STARTED]
    assert [e.data["reason"] for e in started] == ["context length exceeded"]
    assert session.prompt_records[-1]["real_tokens"] < 512
    assert consistent(session, store)


def test_a_server_that_takes_no_images_gets_the_request_again_with_their_descriptions(llama, store) -> None:
    """llama-server without a vision projector answers an image with HTTP 500 "image input is not supported"."""
    import io

    from PIL import Image as PILImage

    from monad_notebook.images.image import Image
    from monad_notebook.messages import ToolCall

    session = session_on(llama, store, vision=True)  # this model name is not known to see: the user said so
    picture = io.BytesIO()
    PILImage.new("RGB", (64, 48), (20, 120, 200)).save(picture, format="PNG")
    chart = Image("img_0123456789", "image/png", 64, 48, picture.getvalue(), "bar chart 'Sales by region'")
    window = session.window
    window.begin_turn()
    call = ToolCall("call_plot", "python", "{}")
    result = session.cascade.tool_message(call, f"displayed:\n{chart.line()}", images=[chart])
    session.cascade.commit([window.new_message("assistant", "", tool_calls=[call]), result])
    seen: list[ev.Event] = []
    session.events.subscribe(seen.append)
    assert session.window.frame.image_detail == "auto"
    reply = session.ask("What does the chart show?")
    assert reply.text is not None and session.window.frame.image_detail is None
    (told,) = [e for e in seen if e.kind == ev.ERROR]
    assert "does not take images" in told.data["message"] and "image input is not supported" in told.data["message"]
    assert not [p for p in session.prompt_records[-1]["parts"] if p["kind"] == "image"]


def test_a_request_over_the_configured_window_is_refused_not_sent(small_llama, store) -> None:
    session = session_on(small_llama, store, window=512)
    session.ask(QUESTIONS[0])
    with pytest.raises(ContextLengthError) as caught:
        session.ask(f"Read all of this. {PARAGRAPH * 20}")
    assert "not sent" in str(caught.value)
    assert [m.role for m in store.load_messages("real")] == ["user", "assistant"]  # refused: not kept either


def test_a_server_killed_mid_stream_gives_one_line_and_the_session_stays_consistent(own_llama, store) -> None:
    session = session_on(own_llama, store, max_out=24)
    session.ask(QUESTIONS[0])
    shown: list[str] = []

    def kill_on_first_text(delta: str) -> None:
        shown.append(delta)
        own_llama.kill()

    with pytest.raises(EndpointError) as caught:
        session.ask("Tell me a long story about a dragon and a lighthouse.", on_text=kill_on_first_text)
    message = str(caught.value)
    assert shown and "\n" not in message and "broke after text was shown" in message
    stored = store.load_messages("real")
    assert [m.role for m in stored] == ["user", "assistant"]  # neither the partial answer nor its question is kept
    assert consistent(session, store)
    own_llama.start()
    assert session.ask("Are you back?").text is not None
    assert [m.role for m in store.load_messages("real")][-2:] == ["user", "assistant"]


def test_a_server_down_then_back_names_the_network_cause_then_answers(own_llama, store) -> None:
    session = session_on(own_llama, store)
    session.ask(QUESTIONS[0])
    own_llama.stop()
    with pytest.raises(EndpointError) as caught:
        session.ask(QUESTIONS[1])
    message = str(caught.value)
    assert "\n" not in message and "Cannot reach" in message and "onnection refused" in message
    own_llama.start()
    assert session.ask(QUESTIONS[2]).text is not None
    assert consistent(session, store)
