"""Issued keys are found wherever they start: glued after a letter, a digit or ``_``, as file names and columns are."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from monad_notebook.redaction.redactor import Redaction, Redactor
from monad_notebook.redaction.token_rules import TOKENS
from tests.context.glued_corpus import ALL_KEYS, GLUED, LOOK_ALIKES, RUNS_ON
from tests.context.secret_corpus import ALNUM, rand

GITHUB = "ghp_" + rand(ALNUM, 36)


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(env={})


def test_the_corpus_holds_a_key_of_every_prefix_rule():
    uncovered = [t.prefix for t in TOKENS if not any(re.match(f"(?:{t.prefix})", key) for _, key in ALL_KEYS)]
    assert uncovered == []


@pytest.mark.parametrize("secret", GLUED, ids=[s.text[:40] for s in GLUED])
def test_a_key_glued_to_a_word_becomes_its_placeholder_and_the_word_stays(redactor, secret):
    result = redactor.redact(secret.text)
    assert result.text == secret.expected
    assert result.counts == {secret.kind: 1}


@pytest.mark.parametrize("secret", RUNS_ON, ids=[s.text[:40] for s in RUNS_ON])
def test_a_key_whose_alphabet_holds_an_underscore_is_found_before_one_too(redactor, secret):
    result = redactor.redact(secret.text)
    before = secret.text[: secret.text.index(secret.value)]
    assert result.text.startswith(f"{before}[REDACTED:{secret.kind}]")
    assert secret.value not in result.text


@given(
    glue=st.text(alphabet="abcxyzXYZ019_", min_size=1, max_size=12),
    after=st.sampled_from([".json", ".csv", " ", "\n", "'", '"', ",", ")", ""]),
    pick=st.integers(min_value=0, max_value=len(ALL_KEYS) - 1),
)
@settings(max_examples=300, deadline=None)
def test_any_word_glued_before_any_key_leaves_no_piece_of_it(glue, after, pick):
    kind, key = ALL_KEYS[pick]
    result = Redactor(env={}).redact(f"{glue}{key}{after}")
    assert result.text == f"{glue}[REDACTED:{kind}]{after}"


@pytest.mark.parametrize("name", sorted(set(LOOK_ALIKES) - {"identifiers"}))
def test_glued_look_alikes_are_left_untouched(redactor, name):
    assert redactor.redact(LOOK_ALIKES[name]) == Redaction(LOOK_ALIKES[name], {})


def test_identifiers_ending_in_a_prefix_are_left_untouched_but_a_hex_digest_glued_to_SK_reads_as_a_twilio_key(
    redactor,
):
    lines = LOOK_ALIKES["identifiers"].splitlines()
    changed = [line for line in lines if redactor.redact(line).counts]
    assert changed == ["TASK9f86d081884c7d659a2feaa0c55ad015 = 'md5 of the task spec'"]


def test_a_look_alike_glued_before_a_real_key_never_hides_it(redactor):
    """The look-alike may go with the key (the span reads as one random body): safe, and only there."""
    for text in (f"disk-usage-report-2024_{GITHUB}.json", f"mask-RCNN-{GITHUB}", f"pnpm_{GITHUB}"):
        result = redactor.redact(text).text
        assert GITHUB not in result and "REDACTED" in result
    assert redactor.redact(f"risk_report_{GITHUB}.json").text == "risk_report_[REDACTED:github].json"


def test_a_url_safe_digest_holding_hf_or_sk_is_not_a_key(redactor):
    lines = "sha256=2KJGwihf_QeZuNs98MgAQ6uSsX7PfPDO4a2FLDdqYJQ,1140\nsha256=7sk-SOYk5OUkbMXWWr_tEInOqPboNYsAb3dEf9,12"
    assert redactor.redact(lines).counts == {}


def test_a_key_at_a_word_boundary_is_judged_as_before(redactor):
    assert redactor.redact("hf_" + rand(ALNUM, 30) + " ok").counts == {"huggingface": 1}
    assert redactor.redact("sk-" + rand(ALNUM, 20)).counts == {"openai": 1}
