"""How many tokens a model's context window holds, by name, when the config does not say."""

from __future__ import annotations

KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-oss": 131_072,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "llama3": 8_192,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.2": 131_072,
    "llama-3.3": 131_072,
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-nemo": 131_072,
    "gemma2": 8_192,
    "gemma3": 131_072,
    "deepseek-r1": 131_072,
    "deepseek-chat": 65_536,
}
DEFAULT_CONTEXT_WINDOW = 128_000


def context_window_for(model: str, override: int | None = None) -> int:
    """The window to plan against: the configured override, else the longest known prefix, else 128k.

    Provider prefixes (``openai/gpt-4o`` on OpenRouter) and Ollama tags (``llama3.1:8b``) are
    matched by their model part, so dated snapshots like ``gpt-4o-2024-08-06`` resolve too.
    """
    if override is not None and override > 0:
        return override
    name = model.strip().lower().rsplit("/", 1)[-1]
    matches = [known for known in KNOWN_CONTEXT_WINDOWS if name.startswith(known)]
    if not matches:
        return DEFAULT_CONTEXT_WINDOW
    return KNOWN_CONTEXT_WINDOWS[max(matches, key=len)]
