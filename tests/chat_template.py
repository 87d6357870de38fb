"""A chat template as strict about roles as Mistral's and the tool-calling Gemma ones, rendered here with jinja2.

``tests/realserver/strict_roles.jinja`` is the template llama-server is started with in the real-server
tests; rendered here the same way a server renders it, so the fast tests judge every request shape by it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

TEMPLATE = Path(__file__).parent / "realserver" / "strict_roles.jinja"


class TemplateRefused(Exception):
    """The template raised, as it makes a server answer HTTP 400."""


def render(messages: list[dict[str, Any]]) -> str:
    """The prompt text a server would feed the model, or ``TemplateRefused`` with the template's words."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise TemplateRefused(message)

    environment = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    environment.globals["raise_exception"] = raise_exception
    template = environment.from_string(TEMPLATE.read_text(encoding="utf-8"))
    return template.render(messages=messages, add_generation_prompt=True, bos_token="")
