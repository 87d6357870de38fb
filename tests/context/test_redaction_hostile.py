"""The redactor against hostile shapes: key pieces, command-line and spoken passwords, placeholder look-alikes."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monad_notebook.redaction.redactor import Redaction, Redactor
from tests.context.hostile_corpus import HOSTILE_NOISE, HOSTILE_SECRETS
from tests.context.secret_corpus import ALNUM, NOISE, rand

ALL_HOSTILE = [secret for secrets in HOSTILE_SECRETS.values() for secret in secrets]
GITHUB = "ghp_" + rand(ALNUM, 36)


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(env={})


def pieces(secret: str, size: int = 8) -> set[str]:
    """Every ``size`` characters in a row of the secret's letters, digits, ``+`` and ``/``: none may survive."""
    return {run[i : i + size] for run in re.findall(r"[A-Za-z0-9+/]{8,}", secret) for i in range(len(run) - size + 1)}


@pytest.mark.parametrize("secret", ALL_HOSTILE, ids=[f"{s.kind}:{s.text[:40]!r}" for s in ALL_HOSTILE])
def test_each_hostile_secret_becomes_one_typed_placeholder_and_the_rest_stays_intact(redactor, secret):
    result = redactor.redact(secret.text)
    assert result.text == secret.expected
    assert result.counts == {secret.kind: 1}


@pytest.mark.parametrize("name", sorted(HOSTILE_NOISE))
def test_look_alikes_of_secrets_are_returned_untouched(redactor, name):
    assert redactor.redact(HOSTILE_NOISE[name]) == Redaction(HOSTILE_NOISE[name], {})


def test_a_key_block_behind_file_viewer_line_numbers_goes_from_begin_to_end(redactor):
    lines = ["-----BEGIN RSA PRIVATE KEY-----", *(rand(ALNUM, 64) for _ in range(10)), "-----END RSA PRIVATE KEY-----"]
    shown = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, 1))
    assert redactor.redact(f"{shown}\n    13\tdone").text == "     1\t[REDACTED:private-key]\n    13\tdone"


def test_three_middle_lines_of_base64_are_too_few_to_call_a_key(redactor):
    text = "\n".join(rand(ALNUM, 64) for _ in range(3))
    assert redactor.redact(text).counts == {}


def test_fifty_sequential_session_ids_are_not_api_keys(redactor):
    rows = ",\n".join(f'{{"session_key": "sess_{i:08d}", "n": {i}}}' for i in range(1, 51))
    assert redactor.redact(f"[{rows}]").counts == {}


def test_a_random_session_key_is_still_an_api_key(redactor):
    assert redactor.redact('{"session_key": "Zq8Lr2Xw9Kp4Tn7V"}').text == '{"session_key": "[REDACTED:api-key]"}'


def test_an_environment_placeholder_is_left_alone_only_while_the_variable_is_a_secret():
    redactor = Redactor(env={"GH_TOKEN": GITHUB})
    once = redactor.redact(f"using {GITHUB}").text
    assert once == "using [REDACTED:env:GH_TOKEN]"
    assert redactor.redact(once) == Redaction(once, {})
    assert Redactor(env={}).redact(once) == Redaction(once, {})


def test_user_pattern_placeholders_are_genuine_too():
    redactor = Redactor(env={}, patterns=[("employee-id", r"EMP-\d{6}")])
    once = redactor.redact("owner EMP-123456").text
    assert redactor.redact(once) == Redaction(once, {})


# --- cut points ----------------------------------------------------------------------------------------


def test_a_cut_inside_a_token_moves_to_its_start_or_with_forward_to_its_end(redactor):
    text = f"head {GITHUB} tail"
    assert redactor.cut_point(text, 10) == 5
    assert redactor.cut_point(text, 10, forward=True) == 5 + len(GITHUB)


def test_a_cut_inside_a_key_block_moves_out_of_the_whole_block(redactor):
    block = (
        "-----BEGIN PRIVATE KEY-----\n" + "\n".join(rand(ALNUM, 64) for _ in range(5)) + "\n-----END PRIVATE KEY-----"
    )
    text = f"é before\n{block}\nafter"
    inside = text.index(block) + 100
    assert redactor.cut_point(text, inside) == text.index(block)
    assert redactor.cut_point(text, inside, forward=True) == text.index(block) + len(block)


def test_a_cut_outside_any_secret_stays_where_it_is(redactor):
    text = f"plain words {GITHUB}"
    assert redactor.cut_point(text, 5) == 5
    assert Redactor(env={}, enabled=False).cut_point(text, 15) == 15


# --- properties ----------------------------------------------------------------------------------------

_NOISE_LINES = sorted(
    {line for text in [*NOISE.values(), *HOSTILE_NOISE.values()] for line in text.splitlines() if len(line) < 400}
)
_PROPERTY = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_PROPERTY
@given(picks=st.lists(st.sampled_from(ALL_HOSTILE), min_size=1, max_size=4), filler=st.sampled_from(_NOISE_LINES))
def test_no_piece_of_a_hostile_secret_survives_among_noise(redactor, picks, filler):
    text = "\n".join([filler, *(s.text for s in picks), filler])
    result = redactor.redact(text)
    for secret in picks:
        around = filler + secret.text.replace(secret.value, "")
        assert not [piece for piece in pieces(secret.value) if piece in result.text and piece not in around]
    assert redactor.redact(result.text) == Redaction(result.text, {})


def test_a_hex_line_beside_a_key_middle_does_not_hide_the_key(redactor):
    middle = [s for s in ALL_HOSTILE if s.kind == "private-key" and s.text.lstrip().startswith("4\t")]
    digest = "827616e0d98ed02c601c01b1231980191ad635a1c03defaececb22209e750918"
    for secret in middle:
        result = redactor.redact(f"{digest}\n{secret.text}\n{digest}")
        assert not [piece for piece in pieces(secret.value) if piece in result.text and piece not in digest]
    assert middle


def test_a_certificate_header_placed_above_a_key_middle_does_not_hide_it(redactor):
    middle = [s for s in ALL_HOSTILE if s.kind == "private-key" and s.text.lstrip().startswith("4\t")]
    for secret in middle:
        result = redactor.redact(f"-----BEGIN CERTIFICATE-----\n{secret.text}\n")
        assert not [piece for piece in pieces(secret.value) if piece in result.text]
    assert middle
