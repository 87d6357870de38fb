"""Test-run logs keep their ``PASS: <test>`` lines, and a password written with the same words is still found."""

from __future__ import annotations

import pytest

from monad_notebook.redaction.redactor import Redaction, Redactor
from tests.context.status_corpus import HELD_OUT_LOGS, HELD_OUT_PASSWORDS, TUNING_LOGS, TUNING_PASSWORDS

LOGS = {**TUNING_LOGS, **{f"held out: {name}": text for name, text in HELD_OUT_LOGS.items()}}
PASSWORDS = TUNING_PASSWORDS + HELD_OUT_PASSWORDS


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(env={})


@pytest.mark.parametrize("name", sorted(LOGS))
def test_a_test_run_log_is_returned_untouched(redactor, name):
    assert redactor.redact(LOGS[name]) == Redaction(LOGS[name], {})


@pytest.mark.parametrize("secret", PASSWORDS, ids=[repr(s.text[:32]) for s in PASSWORDS])
def test_a_password_written_with_the_same_words_becomes_one_placeholder(redactor, secret):
    assert redactor.redact(secret.text) == Redaction(secret.expected, {"password": 1})


def test_a_name_no_test_is_given_is_a_status_among_other_statuses_and_a_password_alone(redactor):
    run = "PASS: vers26b2\nPASS: selective3\nFAIL: pr28639b\n"
    assert redactor.redact(run).text == run
    alone = "USER: ada\nPASS: vers26b2x\n"
    assert redactor.redact(alone).text == "USER: ada\nPASS: [REDACTED:password]\n"


def test_a_comment_after_the_password_does_not_make_it_a_status(redactor):
    assert redactor.redact("PASS: Kq9$mWx2Lp  # the database\n").text == "PASS: [REDACTED:password]  # the database\n"
