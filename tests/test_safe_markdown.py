"""Model-written Markdown renders without loading anything: checked on HTML from a real Markdown renderer."""

from __future__ import annotations

import html
import time

import pytest

from monad_notebook.safe_markdown import sanitize_markdown
from tests.hostile import LEAK, MARKDOWN_LOADS, Load, loading_elements, render

URL = LEAK.replace("HOST", "127.0.0.1:9")


def text_of(rendered: str) -> str:
    return html.unescape(rendered)


@pytest.mark.parametrize("form", MARKDOWN_LOADS, ids=lambda form: form.name)
def test_nothing_in_hostile_markdown_loads_and_the_address_stays_visible(form: Load):
    hostile = form.text.replace("HOST", "127.0.0.1:9")
    assert loading_elements(render(hostile)), "the form must load something when rendered as is"
    rendered = render(sanitize_markdown(hostile))
    assert loading_elements(rendered) == []
    assert "127.0.0.1:9/leak.png?d=secret" in text_of(rendered)


def test_a_remote_image_becomes_a_plain_link_to_its_address():
    rendered = render(sanitize_markdown(f"Here: ![chart]({URL})"))
    assert f'image not loaded: <a href="{html.escape(URL)}">{html.escape(URL)}</a>' in rendered


def test_ordinary_markdown_and_inert_html_are_left_alone():
    text = (
        "# Result\n\n**South** grew *12%*; see [the docs](http://example.com) or <http://example.com>.\n\n"
        "| region | growth |\n|---|---|\n| South | 12% |\n\n```python\ndf[df.x < 3]\nprint('<b>')\n```\n\n"
        "<details><summary>more</summary>x<br>y</details> <sub>footer</sub>"
    )
    assert sanitize_markdown(text) == text


def test_inline_data_images_are_kept_because_they_make_no_request():
    image = "![dot](data:image/png;base64,iVBORw0KGgo=)"
    assert sanitize_markdown(f"a {image} b") == f"a {image} b"
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in render(sanitize_markdown(image))


@pytest.mark.parametrize(
    "text",
    [
        "![x](data:image/svg+xml;base64,PHN2Zz4=)",
        "![x](data:image/png;base64,AAAA http://127.0.0.1:9/x)",
        "![![y](http://127.0.0.1:9/x)](data:image/png;base64,AAAA)",
    ],
)
def test_other_data_uris_and_lookalikes_are_not_shown_as_images(text: str):
    assert "<img" not in render(sanitize_markdown(text))


def test_an_unfinished_image_while_streaming_loads_nothing():
    for end in range(1, len(URL) + 6):
        partial = f"![x]({URL})"[:end]
        assert loading_elements(render(sanitize_markdown(partial))) == []


@pytest.mark.parametrize("text", ["![" * 50_000, "![x]" * 30_000, "<b a" * 30_000, "![x](" + "(" * 100_000])
def test_pathological_markdown_is_sanitized_quickly(text: str):
    started = time.perf_counter()
    sanitized = sanitize_markdown(text)
    assert time.perf_counter() - started < 5
    assert loading_elements(render(sanitized[:20_000])) == []
