"""Which models get images, and what an image costs: OpenAI's published examples."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image as PILImage

from monad_notebook.context.occupancy.tokens import TokenCounter
from monad_notebook.images.vision import data_url_size, image_tokens, sees_images


@pytest.mark.parametrize(
    ("model", "size", "detail", "tokens"),
    [
        ("gpt-4o", (1024, 1024), "high", 765),  # 4 tiles
        ("gpt-4o", (2048, 4096), "high", 1105),  # 1024x2048 -> 768x1536, 6 tiles
        ("gpt-4o", (4096, 8192), "low", 85),
        ("gpt-4.1-mini", (1024, 1024), "auto", 1659),  # 1,024 patches x 1.62
        ("gpt-4.1-mini", (1800, 2400), "high", 2353),  # resized to 1056x1408: 33 x 44 = 1,452 patches x 1.62
        ("gpt-4.1-nano", (1024, 1024), "low", 2520),  # patches ignore detail; x 2.46
        ("gpt-4o-mini", (1024, 1024), "high", 2833 + 4 * 5667),
    ],
)
def test_image_tokens_follow_the_providers_formula(model, size, detail, tokens):
    assert image_tokens(model, *size, detail) == tokens


def test_auto_turns_images_on_only_for_models_known_to_see_them():
    assert sees_images("auto", "gpt-4.1-mini") and sees_images("auto", "anthropic/claude-3-5-sonnet")
    assert sees_images("auto", "qwen2.5-vl-7b-instruct") and sees_images("auto", "llava:13b")
    assert not sees_images("auto", "smollm2") and not sees_images("auto", "o3-mini") and not sees_images("auto", "")
    assert not sees_images("auto", "gpt-4o", declared=False)  # a model object that says it sees none
    assert sees_images(True, "smollm2") and not sees_images(False, "gpt-4o")


def url(fmt: str, size: tuple[int, int]) -> str:
    out = io.BytesIO()
    PILImage.new("RGB", size, (1, 2, 3)).save(out, format=fmt)
    return f"data:image/{fmt.lower()};base64,{base64.b64encode(out.getvalue()).decode()}"


def test_a_requests_image_parts_are_counted_from_their_own_size_and_detail():
    assert data_url_size(url("PNG", (640, 480))) == (640, 480)
    assert data_url_size(url("JPEG", (300, 1200))) == (300, 1200)
    assert data_url_size("data:image/png;base64,!!!") is None and data_url_size("https://x/y.png") is None
    counter = TokenCounter("gpt-4o")
    part = {"type": "image_url", "image_url": {"url": url("PNG", (1024, 1024)), "detail": "high"}}
    low = {"type": "image_url", "image_url": {"url": url("JPEG", (1024, 1024)), "detail": "low"}}
    text_only = counter.count_messages([{"role": "user", "content": [{"type": "text", "text": "look"}]}])
    with_images = counter.count_messages([{"role": "user", "content": [{"type": "text", "text": "look"}, part, low]}])
    assert with_images - text_only == 765 + 85
