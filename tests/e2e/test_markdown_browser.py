"""A model answer in JupyterLab loads nothing by itself: real kernel, real Markdown renderer, a server counting hits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from monad_notebook.testing import FakeOpenAIServer
from tests.e2e.browser import counting_server
from tests.e2e.jupyter import jupyter_server, write_notebook
from tests.hostile import MARKDOWN_LOADS


def answer_in_lab(chromium: Any, workdir: Path, scratch: Path) -> tuple[str, int]:
    """Run the notebook in JupyterLab; the answer's text and how many img / iframe elements it has."""
    with jupyter_server("lab", workdir, scratch, "leak.ipynb") as url:
        page = chromium.new_page(viewport={"width": 1200, "height": 1400})
        page.goto(url)
        page.wait_for_function(
            "window.jupyterapp?.shell?.currentWidget?.context?.sessionContext?.session?.kernel?.status === 'idle'",
            timeout=30_000,
        )
        page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
        footer = page.locator(".jp-OutputArea-output").filter(has_text="session leak")
        footer.wait_for(timeout=60_000)  # the turn is over: the answer is drawn in full
        page.wait_for_timeout(1_000)  # time for any image, frame or stylesheet to be requested
        text = page.locator(".jp-OutputArea-output").filter(has_text="Here is the chart").inner_text()
        images = page.locator(".jp-OutputArea-output img, .jp-OutputArea-output iframe").count()
        page.close()
        return text, images


@pytest.mark.slow
def test_an_answer_with_a_leaking_image_sends_no_request_and_shows_the_address(browser, isolated_env, tmp_path):
    pytest.importorskip("jupyterlab", reason="jupyterlab is not installed (pip install jupyterlab)")
    with counting_server() as (base, hits), FakeOpenAIServer() as model:
        leak = f"{base}/leak.png?d=secret"
        others = "\n\n".join(
            form.text.replace("http://HOST", base).replace("//HOST", base[5:]) for form in MARKDOWN_LOADS
        )
        model.queue(f"Here is the chart: ![x]({leak})\n\nMore:\n\n{others}")
        config = {"models": {"main": {"model": "gpt-4.1-mini", "baseUrl": model.base_url, "maxRetries": 0}}}
        (isolated_env / "agents.json").write_text(json.dumps(config))
        write_notebook(isolated_env / "leak.ipynb", ["%load_ext monad_notebook", "%%monad\nPlot the sales."])
        try:
            text, images = answer_in_lab(browser, isolated_env, tmp_path)
        finally:
            assert hits == [], f"{len(hits)} request(s) left the page: {hits[:5]}"
        assert len(model.chat_requests) == 1
    assert images == 0
    assert f"image not loaded: {leak}" in text
