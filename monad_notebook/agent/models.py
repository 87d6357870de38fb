"""Which model answers for a tier: the configured OpenAI-compatible model, or the scripted demo model."""

from __future__ import annotations

from monad_notebook.config import SCRIPTED_DEMO_MODEL, Config
from monad_notebook.demo import DemoModel
from monad_notebook.provider import ChatModel, OpenAIChatModel


def build_model(config: Config, tier: str = "main") -> ChatModel:
    """The configured model of a tier; ``scripted-demo`` is the labelled scripted demo model."""
    spec = config.models.main if tier == "main" else config.models.resolved_fast()
    if spec.model == SCRIPTED_DEMO_MODEL:
        return DemoModel(context_window=spec.context_window or 32_000)
    return OpenAIChatModel(
        spec.model,
        base_url=spec.base_url,
        api_key_env=spec.api_key_env,
        context_window=spec.context_window,
        timeout=spec.timeout_seconds,
        max_retries=spec.max_retries,
        temperature=spec.temperature,
        max_output_tokens=spec.max_output_tokens,
    )
