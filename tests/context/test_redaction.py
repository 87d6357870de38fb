from __future__ import annotations

import base64
import random
import time
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monad_notebook.config import RedactionConfig
from monad_notebook.errors import ConfigError
from monad_notebook.redaction.redactor import Redaction, Redactor
from tests.context.secret_corpus import ALNUM, NOISE, SECRETS, mixed_tool_output, rand

GITHUB = "ghp_" + rand(ALNUM, 36)
MB = 1_000_000


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(env={})


@pytest.mark.parametrize("secret", SECRETS, ids=[s.id for s in SECRETS])
def test_each_fake_secret_becomes_its_typed_placeholder_and_the_rest_stays_intact(redactor, secret):
    result = redactor.redact(secret.text)
    assert result.text == secret.expected
    assert result.counts == {secret.kind: secret.text.count(secret.value)}
    assert result.redacted


@pytest.mark.parametrize("name", sorted(NOISE))
def test_noise_is_returned_untouched(redactor, name):
    result = redactor.redact(NOISE[name])
    assert result == Redaction(NOISE[name], {})
    assert not result.redacted


@pytest.mark.parametrize(
    "line",
    [
        "password = getpass()",
        'token = os.environ["TOKEN"]',
        "api_key = api_key",
        "secret_key = settings.SECRET_KEY",
        "if token == 'abcdef123456':",
        "max_tokens=4096",
        '"prompt_tokens": 123456789',
        'tokenizer = "bert-base-uncased"',
        "password=abc123",
        "token: expires in 3600 seconds",
        "Please enter your password: below",
        '{"key": "user_2024_region_north"}',
        "export TOKEN=$(cat ~/.token)",
        "token_path=/home/ada/.config/gh/token",
        "2f1e0d9c8b7a69584736251403f2e1d0c9b8a79685746352413f2e1d0c9b8a7  model.bin",
        "run 123e4567-e89b-42d3-a456-426614174000 finished",
        "postgres://user:password@localhost:5432/db",
        "Bearer authentication is described in RFC 6750",
        'authorization = request.headers.get("Authorization")',
        "authorization: Optional[str] = None",
        '"AWS::SecretsManager::Secret": "c85175a4ebcce361",',
        '"SecretArn": "arn:aws:secretsmanager:us-west-2:123456789012:secret:db-1a2b3c",',
        "_AdjustTokenPrivileges = windll.advapi32.AdjustTokenPrivileges",
        "self._sigv4_auth_cls = sigv4_auth_cls",
        '"output_token": "InvalidationList.NextMarker",',
        '"CustomerMasterKeySpec": "RSA_2048",',
        '_PassArg.eval_context: "context.eval_ctx",',
        'creds = " --username=" + auth',
        "when your file has '-----BEGIN RSA PRIVATE KEY-----' and",
    ],
)
def test_code_prose_templates_and_ids_are_not_secrets(redactor, line):
    assert redactor.redact(line).counts == {}


def test_only_the_value_is_replaced_and_the_name_and_quotes_survive(redactor):
    text = 'cfg = {"client_secret": "Zx9-Qw8_Er7.Ty6", "region": "eu-west-1"}'
    assert redactor.redact(text).text == 'cfg = {"client_secret": "[REDACTED:secret]", "region": "eu-west-1"}'


def test_a_secret_that_starts_with_a_slash_is_not_taken_for_a_path(redactor):
    assert redactor.redact('client_secret = "/Zx8Qw3abcdef12Kp9"').text == 'client_secret = "[REDACTED:secret]"'


def test_url_password_keeps_scheme_user_and_host():
    result = Redactor(env={}).redact("mysql+pymysql://reporter:Pa55w0rd!@10.0.0.7:3306/app")
    assert result.text == "mysql+pymysql://reporter:[REDACTED:url-password]@10.0.0.7:3306/app"


def test_each_query_parameter_is_judged_by_its_own_name(redactor):
    text = "GET /cb?auth_type=code&access_token=9f8e7d6c5b4a&page=2&refresh_token=Zy8x7w6v5u4t HTTP/1.1"
    assert redactor.redact(text).text == (
        "GET /cb?auth_type=code&access_token=[REDACTED:token]&page=2&refresh_token=[REDACTED:token] HTTP/1.1"
    )


def test_a_rejected_assignment_does_not_hide_a_real_one_glued_to_it(redactor):
    text = "see oauth2:glpat-abc@host/p.gitX-Api-Key: cce4bbf5b4d287659214f3d6620bb96c"
    assert redactor.redact(text).text.endswith("X-Api-Key: [REDACTED:api-key]")


def test_a_specific_detector_names_the_secret_even_inside_a_generic_assignment(redactor):
    key = "sk-proj-" + rand(ALNUM, 60)
    assert redactor.redact(f"OPENAI_API_KEY={key}").text == "OPENAI_API_KEY=[REDACTED:openai]"


def test_multi_line_private_key_is_replaced_whole_including_its_armour(redactor):
    body = "\n".join(rand(ALNUM, 64) for _ in range(20))
    text = f"before\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\nafter the key"
    assert redactor.redact(text).text == "before\n[REDACTED:private-key]\nafter the key"


def test_a_secret_in_the_middle_of_two_megabytes_of_output_is_redacted(redactor):
    noise = mixed_tool_output(MB, secrets_every=10 * MB)
    result = redactor.redact(f"{noise}\nremote: https://{GITHUB}@github.com/o/r.git\n{noise}")
    assert GITHUB not in result.text
    assert result.counts == {"github": 1}
    assert result.text == f"{noise}\nremote: https://[REDACTED:github]@github.com/o/r.git\n{noise}"


def test_text_around_secrets_keeps_non_ascii_and_lone_surrogates(redactor):
    text = f"clé ✓ \udc80 {GITHUB} — fin"
    assert redactor.redact(text).text == "clé ✓ \udc80 [REDACTED:github] — fin"


def test_existing_placeholders_are_left_alone_so_redacting_twice_changes_nothing(redactor):
    once = redactor.redact(f'token: {GITHUB}\n"password": "Tr0ub4dor&3x"')
    twice = redactor.redact(once.text)
    assert twice == Redaction(once.text, {})


def test_a_placeholder_that_creates_a_word_boundary_lets_the_next_secret_be_found_in_the_same_call():
    redactor = Redactor(env={"MY_TOKEN": "abcd1234efgh"})
    once = redactor.redact("xabcd1234efghAuthorization: Zx9Yw8Xv7Uu6Tt5Ss4")
    assert once.text == "x[REDACTED:env:MY_TOKEN]Authorization: [REDACTED:bearer]"
    assert redactor.redact(once.text).counts == {}


def test_find_lists_the_kinds_present_without_rewriting(redactor):
    assert redactor.find(f"{GITHUB} and password: s3cr3t-pa55") == ["github", "password"]
    assert redactor.find("nothing to see") == []


def test_disabled_redactor_passes_secrets_through():
    text = f"token {GITHUB}"
    assert Redactor(env={}, enabled=False).redact(text) == Redaction(text, {})


# --- environment -----------------------------------------------------------------------------------


def test_env_secret_values_are_replaced_by_the_variable_name():
    env = {"MY_SERVICE_TOKEN": "tok-9f8e7d6c5b4a", "DB_PASS": "hunter2hunter2", "EDITOR": "nano-wrapper-2"}
    result = Redactor(env=env).redact("tok-9f8e7d6c5b4a then hunter2hunter2; editor nano-wrapper-2")
    assert result.text == "[REDACTED:env:MY_SERVICE_TOKEN] then [REDACTED:env:DB_PASS]; editor nano-wrapper-2"
    assert result.counts == {"env:MY_SERVICE_TOKEN": 1, "env:DB_PASS": 1}


def test_env_values_that_cannot_be_secrets_are_ignored():
    env = {"SHORT_KEY": "abc123", "SSH_AUTH_SOCK": "/tmp/ssh-XYZ/agent.1", "API_TOKEN_TTL": "86400000", "AUTH": "false"}
    text = "abc123 /tmp/ssh-XYZ/agent.1 86400000 false"
    assert Redactor(env=env).redact(text).text == text


def test_env_none_reads_the_kernel_environment_at_each_call(monkeypatch):
    redactor = Redactor()
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "first-Secret-1")
    assert redactor.redact("pw first-Secret-1").text == "pw [REDACTED:env:WAREHOUSE_PASSWORD]"
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "second-Secret-2")
    assert redactor.redact("first-Secret-1 second-Secret-2").text == "first-Secret-1 [REDACTED:env:WAREHOUSE_PASSWORD]"


def test_env_secret_takes_precedence_over_a_builtin_detector(monkeypatch):
    monkeypatch.setenv("GH_TOKEN", GITHUB)
    assert Redactor().redact(f"using {GITHUB}").text == "using [REDACTED:env:GH_TOKEN]"


def test_env_secrets_off_ignores_the_environment(monkeypatch):
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "first-Secret-1")
    assert Redactor(env_secrets=False).redact("pw first-Secret-1").text == "pw first-Secret-1"


# --- user patterns and hook ----------------------------------------------------------------------------


def test_user_pattern_replaces_the_whole_match_with_its_name():
    result = Redactor(env={}, patterns=[("employee-id", r"EMP-\d{6}")]).redact("owner EMP-123456 ok")
    assert result == Redaction("owner [REDACTED:employee-id] ok", {"employee-id": 1})


def test_user_pattern_with_a_group_replaces_only_the_group():
    redactor = Redactor(env={}, patterns=[("ticket", r"ticket=(\w{10})")])
    assert redactor.redact("ticket=AbCdEf1234 done").text == "ticket=[REDACTED:ticket] done"


def test_user_pattern_that_re2_cannot_compile_is_a_one_line_config_error():
    with pytest.raises(ConfigError, match="pattern 'peek' is not valid RE2") as info:
        Redactor(patterns=[("peek", r"foo(?=bar)")])
    assert "\n" not in str(info.value)


def test_hook_sees_already_redacted_text_and_its_change_counts_as_hook():
    seen = []

    def hook(text: str) -> str:
        seen.append(text)
        return text.replace("Project Falcon", "[REDACTED:codename]")

    result = Redactor(env={}, hook=hook).redact(f"Project Falcon uses {GITHUB}")
    assert seen == ["Project Falcon uses [REDACTED:github]"]
    assert result == Redaction("[REDACTED:codename] uses [REDACTED:github]", {"github": 1, "hook": 1})


def test_hook_that_changes_nothing_does_not_count():
    assert Redactor(env={}, hook=lambda text: text).redact("plain").counts == {}


@pytest.mark.parametrize("hook", [lambda text: 1 / 0, lambda text: None], ids=["raises", "returns-none"])
def test_failing_hook_fails_closed_and_withholds_the_whole_text(hook):
    result = Redactor(env={}, hook=hook).redact("internal hostname db-7.corp and more")
    assert result.text.startswith("[REDACTED:hook-error] the redaction hook failed: ")
    assert "db-7.corp" not in result.text and "\n" not in result.text
    assert result.counts == {"hook-error": 1}


def test_from_config_builds_patterns_hook_and_switches(tmp_path, monkeypatch):
    (tmp_path / "house_hooks.py").write_text("def scrub(text):\n    return text.replace('falcon', '[REDACTED:cn]')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("WAREHOUSE_PASSWORD", "first-Secret-1")
    cfg = RedactionConfig.model_validate(
        {"envSecrets": False, "patterns": [{"name": "emp", "regex": r"EMP-\d{6}"}], "hook": "house_hooks:scrub"}
    )
    result = Redactor.from_config(cfg).redact("falcon EMP-123456 first-Secret-1")
    assert result == Redaction("[REDACTED:cn] [REDACTED:emp] first-Secret-1", {"emp": 1, "hook": 1})


def test_from_config_accepts_any_object_with_the_fields():
    cfg = SimpleNamespace(enabled=False, env_secrets=True, patterns=[], hook=None)
    assert not Redactor.from_config(cfg).redact(GITHUB).redacted
    assert Redactor.from_config(None).redact(GITHUB).redacted


@pytest.mark.parametrize("spec", ["no_such_module_xyz:scrub", "json:no_such_function", "json:__name__"])
def test_from_config_with_an_unusable_hook_is_a_one_line_config_error(spec):
    cfg = SimpleNamespace(enabled=True, env_secrets=True, patterns=[], hook=spec)
    with pytest.raises(ConfigError, match=f"context.redaction.hook '{spec}'") as info:
        Redactor.from_config(cfg)
    assert "\n" not in str(info.value)


# --- speed ---------------------------------------------------------------------------------------------


def _base64_run(size: int) -> str:
    return base64.b64encode(random.Random(3).randbytes(size * 3 // 4)).decode()


@pytest.mark.parametrize(
    "make",
    [lambda: " " * 10 * MB, lambda: "x1,y2;" * (10 * MB // 6), lambda: _base64_run(10 * MB), lambda: "a=" * (5 * MB)],
    ids=["whitespace", "one-line", "base64", "a=a=a"],
)
def test_ten_megabytes_of_pathological_input_finish_quickly(redactor, make):
    text = make()
    started = time.perf_counter()
    result = redactor.redact(text)
    assert time.perf_counter() - started < 5
    assert result.text == text


# --- properties ----------------------------------------------------------------------------------------

_NOISE_LINES = sorted({line for text in NOISE.values() for line in text.splitlines() if len(line) < 400})
_noise_text = st.lists(st.sampled_from(_NOISE_LINES), min_size=1, max_size=30).map("\n".join)
_any_piece = st.one_of(
    st.sampled_from(_NOISE_LINES),
    st.sampled_from([s.text for s in SECRETS]),
    st.text(max_size=40),
    st.sampled_from(["[REDACTED:github]", "password: ", "token=", '"api_key": "', "://u:", "@h", "-----BEGIN "]),
)
_mixed_text = st.lists(_any_piece, max_size=12).flatmap(
    lambda pieces: st.lists(
        st.sampled_from(["", " ", "\n", "=", ": ", '"']), min_size=len(pieces), max_size=len(pieces)
    ).map(lambda seps: "".join(p + s for p, s in zip(pieces, seps, strict=True)))
)
_PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_PROPERTY
@given(text=_mixed_text)
def test_redacting_twice_is_the_same_as_redacting_once(redactor, text):
    once = redactor.redact(text)
    assert redactor.redact(once.text) == Redaction(once.text, {})


@_PROPERTY
@given(text=_noise_text)
def test_lines_of_noise_in_any_order_come_back_unchanged(redactor, text):
    assert redactor.redact(text) == Redaction(text, {})


@_PROPERTY
@given(picks=st.lists(st.sampled_from(SECRETS), min_size=1, max_size=5), filler=_noise_text)
def test_no_secret_survives_among_noise(redactor, picks, filler):
    text = "\n".join([filler, *(s.text for s in picks), filler])
    result = redactor.redact(text)
    for secret in picks:
        assert secret.value not in result.text
    assert sum(result.counts.values()) == sum(text.count(s.value) for s in {s.id: s for s in picks}.values())
