"""Images the agent's code displays: kept as bytes, sent to a model that sees, evicted first, brought back."""

from __future__ import annotations

import base64
import io
import json

import pytest
from PIL import Image as PILImage

from monad_notebook import Session
from monad_notebook.config import Config
from monad_notebook.config_schema import ImagesConfig
from monad_notebook.images.figures import FigureRecorder, describe
from monad_notebook.testing import ScriptedModel

pytestmark = pytest.mark.lance

PLOT = """
import matplotlib
matplotlib.use("agg")
import matplotlib.pyplot as plt
from IPython.display import display
fig, ax = plt.subplots(figsize=(16, 12), dpi=100)
ax.plot([1, 2, 3], [3, 1, 2])
ax.set_title("Weekly churn by region")
ax.set_xlabel("week")
ax.set_ylabel("churn")
display(fig)
plt.close(fig)
"""


@pytest.fixture
def shell(ip):
    """The test shell showing figures as PNG, as a kernel with the inline backend does."""
    from IPython.core.pylabtools import select_figure_formats

    before = list(ip.display_formatter.active_types)
    ip.display_formatter.active_types = ["text/plain", "image/png", "image/jpeg", "image/svg+xml"]
    select_figure_formats(ip, {"png"})
    yield ip
    ip.display_formatter.active_types = before


def png(width: int, height: int, *, noise: bool = False) -> bytes:
    import os

    picture = (
        PILImage.frombytes("RGB", (width, height), os.urandom(width * height * 3))
        if noise
        else PILImage.new("RGB", (width, height), (200, 30, 30))
    )
    out = io.BytesIO()
    picture.save(out, format="PNG", compress_level=1)
    return out.getvalue()


def session(store, shell, model, **context) -> Session:
    config = Config.model_validate({"tools": {"python": {"approval": "auto"}}, "context": context})
    return Session("plots", config=config, store=store, model=model, shell=shell)


def image_parts(message: dict) -> list[dict]:
    content = message.get("content")
    return [p for p in content if p.get("type") == "image_url"] if isinstance(content, list) else []


def decoded(part: dict) -> PILImage.Image:
    url = part["image_url"]["url"]
    head, _, payload = url.partition(",")
    assert head in ("data:image/png;base64", "data:image/jpeg;base64")
    return PILImage.open(io.BytesIO(base64.b64decode(payload)))


def test_a_chart_reaches_a_model_that_sees_after_the_tool_results_scaled_and_counted(store, shell):
    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "It dips at week 2."], vision=True)
    s = session(store, shell, model, images={"maxSide": 512, "detail": "low"})
    s.ask("plot weekly churn and tell me what you see")
    sent = model.calls[1].messages
    tool_at = next(i for i, m in enumerate(sent) if m["role"] == "tool")
    assert "[image img_" in sent[tool_at]["content"] and "base64" not in sent[tool_at]["content"]
    assert "line chart 'Weekly churn by region' (x: week, y: churn)" in sent[tool_at]["content"]
    follow = sent[tool_at + 1]
    assert follow["role"] == "user"
    (part,) = image_parts(follow)
    assert part["image_url"]["detail"] == "low"
    assert max(decoded(part).size) == 512  # a 1600x1200 figure scaled to the longest side
    record = s.prompt_records[-1]
    (listed,) = [p for p in record["parts"] if p["kind"] == "image"]
    assert listed["text"].startswith("[image img_") and listed["tokens"] >= 85  # low detail: at least 85


def test_the_image_is_stored_as_bytes_beside_its_result_and_reloads_with_the_window(store, shell, tmp_path):
    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "ok"], vision=True)
    s = session(store, shell, model)
    s.ask("plot it")
    result = next(m for m in s.history() if m.role == "tool")
    (kept,) = store.load_images("plots", [result.tool_call_id])[result.tool_call_id]
    assert kept.data[:8] == b"\x89PNG\r\n\x1a\n" and kept.id in result.content
    assert "iVBOR" not in json.dumps([m.content for m in s.history()])  # no base64 in the transcript
    again = ScriptedModel(["still there"], vision=True)
    reopened = session(store, shell, again)
    reopened.ask("and now?")
    assert len([p for m in again.calls[0].messages for p in image_parts(m)]) == 1


def test_a_text_only_model_gets_the_description_and_no_image(store, shell):
    from monad_notebook.cell.status import images_sentence

    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "ok"])  # vision "auto": off
    s = session(store, shell, model)
    s.ask("plot it")
    assert "one-line descriptions (models.main.vision is off)" in images_sentence(s.status()["images"])
    sent = model.calls[1].messages
    assert not [p for m in sent for p in image_parts(m)]
    tool = next(m for m in sent if m["role"] == "tool")
    assert "[image img_" in tool["content"] and "'Weekly churn by region'" in tool["content"]
    assert "view_image" not in [t["function"]["name"] for t in model.calls[1].tools]


def test_eviction_clears_images_first_and_view_image_brings_one_back(store, shell):
    steps = [ScriptedModel.tool_call("python", {"code": PLOT}, id=f"c{i}") for i in range(4)]
    model = ScriptedModel([*steps, "done"], vision=True, context_window=6000)
    s = session(store, shell, model, eviction={"atFraction": 0.3, "keepRecentRounds": 1, "clearAtLeast": 300})
    s.ask("plot it four times")
    last = model.calls[-1].messages
    assert len([p for m in last for p in image_parts(m)]) == 1  # only the latest round's image is sent
    cleared = [m for m in last if m["role"] == "tool" and "[images cleared from the prompt" in m["content"]]
    assert cleared and all("displayed:" in m["content"] for m in cleared)  # the text stayed
    handle = cleared[0]["content"].split("[image ", 1)[1].split(":", 1)[0]
    model.queue(ScriptedModel.tool_call("view_image", {"id": handle}, id="v1"), "it is the same chart")
    s.ask("show me the first one again")
    shown = model.calls[-1].messages
    view = next(m for m in shown if m.get("tool_call_id") == "v1")
    assert view["content"].startswith(f"[image {handle}:") and view["content"].endswith("attached below")
    follow = shown[shown.index(view) + 1]
    assert handle in json.dumps(follow) and len(image_parts(follow)) == 1


def test_view_image_refuses_what_is_not_a_handle_in_one_line(store, shell):
    model = ScriptedModel(
        [
            ScriptedModel.tool_call("view_image", {"id": "../etc/passwd"}),
            ScriptedModel.tool_call("view_image", {"id": "img_0000000000"}),
            "ok",
        ],
        vision=True,
    )
    session(store, shell, model).ask("show an image")
    answers = [m["content"] for m in model.calls[-1].messages if m["role"] == "tool"]
    assert answers[0].startswith("error: view_image: ") and "not an image handle" in answers[0]
    assert 'no image "img_0000000000" in this session' in answers[1]


def test_branching_copies_images_and_reset_drops_them(store, shell):
    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "ok"], vision=True)
    s = session(store, shell, model)
    s.ask("plot it")
    result = next(m for m in s.history() if m.role == "tool")
    s.branch("plots-b")
    assert store.load_images("plots-b", [result.tool_call_id])
    s.reset()
    assert not store.load_images("plots", [result.tool_call_id])
    assert store.load_images("plots-b", [result.tool_call_id])


# --- bad input: one line each, bounded bytes kept --------------------------------


def recorder(**config) -> FigureRecorder:
    return FigureRecorder(ImagesConfig(**config), "plt.plot(x)")


def test_a_corrupt_png_an_svg_and_bad_base64_are_each_named_in_one_line_and_not_kept():
    r = recorder()
    corrupt = base64.b64encode(png(10, 10)[:40]).decode()
    assert (
        r.record({"image/png": corrupt})
        == "[image/png shown to the user, not kept: it could not be read: corrupt or not an image]"
    )
    assert "vector images are not kept or sent" in r.record({"image/svg+xml": "<svg/>"})
    assert "not kept" in r.record({"image/png": 12345})
    assert r.captured.images == []


def test_a_huge_image_is_scaled_to_bounded_bytes_and_a_bomb_is_refused():
    big = png(4200, 4200, noise=True)  # about 50 MB of noise
    assert len(big) > 45_000_000
    r = recorder(maxSide=1024)
    line = r.record({"image/png": base64.b64encode(big).decode()})
    (kept,) = r.captured.images
    assert line == kept.line() and max(kept.width, kept.height) == 1024 and len(kept.data) < 1_600_000
    bomb = png(12000, 9000)  # 108 million pixels, a few hundred KB
    assert "million pixels" in recorder().record({"image/png": bomb})


def test_two_hundred_figures_keep_the_first_few_and_say_how_many_more():
    r = recorder(maxPerResult=8)
    small = base64.b64encode(png(20, 20)).decode()
    lines = [r.record({"image/png": small, "text/plain": "<Figure>"}) for _ in range(200)]
    assert len(r.captured.images) == 8 and sum(bool(line) for line in lines) == 8
    assert r.summary_line().startswith("[192 more image(s) shown to the user, not kept")


def test_descriptions_name_what_the_code_plotted():
    assert describe('sns.barplot(data=df, x="region", y="revenue")\nplt.title("Revenue")') == (
        "bar chart 'Revenue' (x: region, y: revenue)"
    )
    assert describe('df.plot(kind="hist", title="Order sizes")') == "hist chart 'Order sizes'"
    assert describe("import numpy as np\nshow(picture)") == "image drawn by `show(picture)`"


STRICT_TEMPLATE_ERROR = (  # what llama-server answers when the model's chat template raises
    "Unable to generate parser for this template. Automatic parser generation failed: \n------------\n"
    "While executing CallExpression at line 15, column 32 in source:\n...= 0) -%}\u21b5 {{- raise_exception('After "
    "the optional system message, con...\n ^\nError: Jinja Exception: After the optional system message, "
    "conversation roles must alternate user/assistant/user/assistant/..."
)


@pytest.mark.parametrize(
    ("refusal", "told"),
    [
        (  # llama-server without a vision projector
            "image input is not supported - hint: you may need to provide the mmproj",
            ["does not take images", "image input is not supported"],
        ),
        (  # a chat template that insists on alternating roles refuses the user message that holds the images
            STRICT_TEMPLATE_ERROR,
            ["does not take images after tool results", "conversation roles must alternate user/assistant/user/"],
        ),
    ],
)
def test_an_endpoint_refusing_images_gets_the_request_again_without_them_and_the_user_is_told(
    store, shell, refusal, told
):
    from monad_notebook.testing import FakeOpenAIServer, tool_call

    with FakeOpenAIServer() as server:
        server.queue(tool_call("python", {"code": PLOT}), "a dip at week 2")
        main = {"model": "gpt-4o", "baseUrl": server.base_url, "apiKeyEnv": "FAKE_KEY", "maxRetries": 2}
        config = Config.model_validate(
            {
                "models": {"main": main, "fast": main, "embedding": {"provider": "none"}},
                "tools": {"python": {"approval": "auto"}},
            }
        )
        with pytest.MonkeyPatch.context() as env:
            env.setenv("FAKE_KEY", "k")
            s = Session("refusing", config=config, store=store, shell=shell)
            seen = []
            s.events.subscribe(lambda event: seen.append(event))
            s.ask("plot churn")  # gpt-4o sees images ("auto"): the second request carries the chart
            assert len([p for m in server.chat_requests[1]["messages"] for p in image_parts(m)]) == 1
            server.fail(500, message=refusal)
            server.queue("described in text")
            reply = s.ask("and the chart again?")
        refused, retried = server.chat_requests[2:]  # refused once: not retried as a server fault
        assert [p for m in refused["messages"] for p in image_parts(m)]
        assert not [p for m in retried["messages"] for p in image_parts(m)]
        assert "[image img_" in json.dumps(retried["messages"])  # the description is still there
        assert reply.text == "described in text"
        (event,) = [e for e in seen if e.kind == "session.error"]
        assert all(words in event.data["message"] for words in [*told, "models.main.vision"])


def test_export_writes_the_images_as_the_cells_outputs_and_prompt_lists_them(store, shell, tmp_path):
    from monad_notebook.cell.prompt_record import render_prompt_record
    from monad_notebook.export import export_notebook

    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "ok"], vision=True)
    s = session(store, shell, model)
    s.ask("plot it")
    listing = render_prompt_record(s.prompt_records, None)
    (line,) = [row for row in listing.splitlines() if row.strip().startswith("image ")]
    assert "[image img_" in line and int(line.split()[2].replace(",", "")) > 85
    path, _ = export_notebook(store, "plots", tmp_path / "plots.ipynb")
    notebook = json.loads(path.read_text())
    (code,) = [c for c in notebook["cells"] if c["cell_type"] == "code"]
    (shown,) = [o for o in code["outputs"] if "image/png" in o.get("data", {})]
    kept = next(iter(store.load_images("plots", [m.tool_call_id for m in s.history() if m.role == "tool"]).values()))
    assert base64.b64decode(shown["data"]["image/png"]) == kept[0].data


def test_five_compactions_later_the_chart_is_named_in_the_summary_found_by_recall_and_viewable(store, shell):
    from monad_notebook.messages import ToolCall
    from tests.context.embedders import KeywordEmbedder

    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": PLOT}), "It dips at week 2."], vision=True)
    config = Config.model_validate(
        {
            "tools": {"python": {"approval": "auto"}},
            "models": {"fast": {"model": "scripted-demo"}},
            "context": {"summarize": {"keepRecent": 2}},
        }
    )
    s = Session("plots", config=config, store=store, model=model, shell=shell, embedder=KeywordEmbedder())
    s.ask("plot weekly churn by region")
    result = next(m for m in s.history() if m.role == "tool")
    handle = store.load_images("plots", [result.tool_call_id])[result.tool_call_id][0].id
    for i in range(6):
        model.queue(f"noted {i}")
        s.ask(f"unrelated question {i} about the warehouse budget and staffing")
        assert s.compact()
    assert s.cascade.compaction.compactions >= 5
    assert handle in s.summary.text and "Weekly churn by region" in s.summary.text
    s.wait_for_background()
    found = s.recall.search("the chart of weekly churn by region")
    assert any(handle in p.hit.snippet for p in found)
    view = s.execute_tool(ToolCall("v", "view_image", json.dumps({"id": handle})))
    assert view.images and view.images[0].data == store.get_image("plots", handle).data
    s.handoff("plots-2")  # a fresh session from the summary, which names the chart by its handle
    fresh = Session("plots-2", config=config, store=store, model=ScriptedModel([], vision=True), shell=shell)
    assert handle in fresh.summary.text
    again = fresh.execute_tool(ToolCall("w", "view_image", json.dumps({"id": handle})))
    assert again.images and again.images[0].data == view.images[0].data


def test_two_hundred_figures_in_one_cell_keep_eight_and_the_turn_goes_on(store, shell):
    code = (
        "import matplotlib\nmatplotlib.use('agg')\nimport matplotlib.pyplot as plt\n"
        "from IPython.display import display\n"
        "for i in range(200):\n"
        "    fig, ax = plt.subplots(figsize=(1, 1), dpi=40)\n"
        "    ax.plot([0, i])\n"
        "    ax.axis('off')\n"  # no ticks or labels to lay out: 200 figures draw in a quarter of the time
        "    display(fig)\n"
        "    plt.close(fig)\n"
        "print('drawn')"
    )
    model = ScriptedModel([ScriptedModel.tool_call("python", {"code": code}), "200 lines"], vision=True)
    s = session(store, shell, model)
    reply = s.ask("draw them all")
    result = next(m for m in s.history() if m.role == "tool")
    assert reply.text == "200 lines" and "drawn" in result.content
    assert len(store.load_images("plots", [result.tool_call_id])[result.tool_call_id]) == 8
    assert "[192 more image(s) shown to the user, not kept" in result.content
    assert result.content.count("<Figure") == 8  # the figures beyond the first eight are counted, not listed
    assert len([p for m in model.calls[1].messages for p in image_parts(m)]) == 8
