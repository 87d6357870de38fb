"""Orders about how the assistant is controlled, however they are worded.

The patterns in ``instructions`` know the usual phrasings; this catches new ones by what they
are made of. A fact is an order when it is phrased as one (an imperative, "must", "always",
"going forward", a "Rule:" label) and it is about the assistant's controls: approvals and
permissions, safety features, secrets, its own instructions and memory, running code, sending
data out, or what the user is told. User preferences are orders too, but about the work
("Always use the region column"), so they touch none of those topics and pass. The bar: text
that speaks to the assistant about one control topic, that weakens approvals or safety features,
or an order that touches two topics.
"""

from __future__ import annotations

import re

_TOPICS: dict[str, list[str]] = {
    "approvals": [
        r"approv\w*|confirm\w*|permission\w*|authori[sz]\w*|consent|clearance|allowed to|in advance",
        r"sudo|as root|privileges?|elevat\w*|(?:instead of|rather than|without) (?:asking|checking|confirming)",
        r"show(?:ing)? (?:the )?code|before running",
    ],
    "safety features": [
        r"safety|sandbox\w*|redact\w*|guardrails?|filters?|refus\w*|restrictions?|moderation|audit\w*",
        r"anywhere on|any file|/etc/",
    ],
    "secrets": [
        r"secrets?|credentials?|passwords?|passwd|api ?keys?|private keys?|tokens?|os\.environ|keychain|cookies?",
        r"environment variables|(?:full|entire|whole) environment|\.env\b|\.ssh|\.aws|\.?netrc|~/\.\w+",
        r"(?:every|each|all) messages?|this chat|chat (?:history|logs?|transcripts?)|transcripts?|conversation",
    ],
    "its instructions": [
        r"instructions?|system prompt|prompts?|guidelines|directives?|these notes|the notes|this note|memory|memories",
        r"requests? from (?:a |the )?tools?|your (?:own )?(?:rules|constraints|limits)",
    ],
    "running code": [
        r"execut\w*|exec|eval|shell|commands?|scripts?|tool calls?|tools?|subprocess|terminal|startup|destructive",
        r"any code|arbitrary code|run(?:ning)? code|the code (?:in|from)|python calls?|install\w*|packages?|pip",
        r"requests\.\w+|python -c",
    ],
    "sending data out": [
        r"send|sends|sent|sending|forward\w*|upload\w*|post|posts|posted|posting|transmit\w*|exfiltrat\w*|leak\w*",
        r"pastebin|webhook|https?://\S+|[\w.+-]+@[\w-]+\.[\w.]+|visible|external|back up|server",
        r"e-?mail (?:the|it|them|every|all|a copy)|export\w* (?:the )?(?:full|entire|whole)",
    ],
    "what the user is told": [
        r"quietly|secretly|covertly|hide|hidden|conceal\w*|without (?:telling|informing)|pretend\w*|lie|lying",
        r"not what the user|the user (?:says|asks|wants)|user'?s requests|tests?|fake|genuine",
        r"(?:any|all|every) mentions? of|omit\w*|leave out|suppress\w*|html comments?|no notes",
    ],
}
_TOPIC_PATTERNS = {name: re.compile(rf"\b(?:{'|'.join(parts)})", re.IGNORECASE) for name, parts in _TOPICS.items()}
_ADDRESS = re.compile(
    r"\byou\b|\byou'\w+|\byour\b|\byourself\b|\b(?:the )?(?:assistants?|ai|llm|chatbot)\b|\bthe (?:model|agent)'s\b",
    re.IGNORECASE,
)
_IMPERATIVES = (
    "do don't never always run execute call send add put copy write delete remove disable enable switch set change "
    "reveal print show forward upload include ignore disregard forget treat approve grant allow skip stop start begin "
    "tell reply respond answer make keep proceed override read open fetch download install store save please prefer "
    "consider trust follow obey use retry drop list email mail post paste attach append insert embed log dump export "
    "share push sync mirror back hide omit suppress deny claim say pretend act assume accept let permit authorize "
    "authorise escalate elevate bypass load import source prepend rewrite click"
)
_DIRECTIVE = re.compile(
    r"\b(?:must|shall|should|have to|has to|need to|needs to|are to|is to|always|never|proceed|ensure|make sure"
    r"|mandatory|required|going forward|from now on|henceforth|at all times|immediately|in advance)\b"
    rf"|(?:^|[.;:!?]\s*|,\s*(?:then\s+)?|\b(?:and|then)\s+)(?:{'|'.join(_IMPERATIVES.split())})\b"
    r"|^[\w -]{0,30}\b(?:rule|override|directive|instruction|command|order|requirement|mandatory|policy|note)"
    r"(?:\s*#?\d+)?(?:\s+from\s+[\w ]{1,20})?\s*[:—–]|\bshould be followed\b|\bcounts? as\b",
    re.IGNORECASE,
)


_WEAKENED = re.compile(
    r"\b(?:stop|skip\w*|without|no longer|never|don'?t|do not|disabl\w*|turn\w* off|switch\w* off|broken|annoying"
    r"|unnecessary|not needed|yes on)\b",
    re.IGNORECASE,
)


def control_topics(text: str) -> list[str]:
    """The assistant's controls that ``text`` talks about."""
    return [name for name, pattern in _TOPIC_PATTERNS.items() if pattern.search(text)]


def order_about_controls(text: str) -> str | None:
    """A short reason when ``text`` is an order about the assistant's controls, else None."""
    topics = control_topics(text)
    if topics and _ADDRESS.search(text):
        return "speaks to the assistant about " + " and ".join(topics[:2])
    if {"approvals", "safety features"} & set(topics) and _WEAKENED.search(text):
        return "weakens the assistant's " + " and ".join(t for t in topics if t in ("approvals", "safety features"))
    if len(topics) >= 2 and _DIRECTIVE.search(text):
        return "gives the assistant orders about " + " and ".join(topics[:2])
    return None
