from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from monad_notebook.config import (
    Config,
    ConfigWatcher,
    deep_merge,
    find_config_path,
    load_config,
    monad_home,
    parse_config,
)
from monad_notebook.errors import ConfigError
from tests.files import touch_later

DOCS = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def write(path: Path, data: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def config_error(data: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_config(data)
    return str(caught.value)


def flatten(data: dict[str, Any], prefix: str = "") -> list[str]:
    paths = []
    for key, value in data.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            paths += flatten(value, path + ".")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            paths += [path, *flatten(value[0], path + "[].")]
        else:
            paths.append(path)
    return paths


# Defaults and discovery


def test_without_a_file_every_key_has_its_default():
    config, source = load_config()
    assert source is None
    assert config.models.main.model == "gpt-4.1-mini"
    assert config.models.fast.model == "gpt-4.1-nano"
    assert config.models.embedding.provider == "local"
    assert config.store.optimize_every_writes == 50
    assert config.agent.max_steps == 24
    assert config.tools.python.approval == "ask"
    assert config.context.tool_output.max_chars == 24000
    assert config.context.eviction.at_fraction == 0.5
    assert (config.context.summarize.soft_fraction, config.context.summarize.hard_fraction) == (0.75, 0.9)
    assert config.context.memory_promotion.mode == "off"
    assert not config.context.retrieval.enabled
    assert config.context.redaction.enabled


def test_json_dict_uses_camel_case_keys_and_round_trips():
    data = Config().to_json_dict()
    assert data["context"]["toolOutput"]["headFraction"] == 0.7
    assert data["context"]["memoryPromotion"] == {"mode": "off", "maxFacts": 8}
    assert data["models"]["main"]["apiKeyEnv"] == "OPENAI_API_KEY"
    assert parse_config(json.loads(json.dumps(data))).to_json_dict() == data


def test_snake_case_keys_are_accepted_as_well_as_camel_case():
    config = parse_config({"context": {"tool_output": {"max_chars": 500}}, "agent": {"maxSteps": 3}})
    assert config.context.tool_output.max_chars == 500
    assert config.agent.max_steps == 3


def test_monad_home_defaults_to_dot_monad_in_the_users_home(monkeypatch, tmp_path):
    monkeypatch.delenv("MONAD_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert monad_home() == tmp_path / ".monad"


def test_finds_the_working_directory_file_before_the_one_in_monad_home(isolated_env):
    home_file = write(monad_home() / "agents.json", {"agent": {"maxSteps": 2}})
    assert find_config_path() == home_file
    local_file = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    config, source = load_config()
    assert source == local_file
    assert config.agent.max_steps == 3


def test_monad_config_wins_over_the_other_places(isolated_env, tmp_path, monkeypatch):
    write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    named = write(tmp_path / "elsewhere" / "team.json", {"agent": {"maxSteps": 7}})
    monkeypatch.setenv("MONAD_CONFIG", str(named))
    config, source = load_config()
    assert source == named
    assert config.agent.max_steps == 7


def test_monad_config_naming_a_missing_file_says_so(monkeypatch):
    monkeypatch.setenv("MONAD_CONFIG", "/nowhere/agents.json")
    with pytest.raises(ConfigError, match=r"MONAD_CONFIG names /nowhere/agents\.json, which does not exist"):
        find_config_path()


# Validation: one line, naming the file and the dotted key


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"context": {"eviction": {"atFraction": 1.5}}},
            "context.eviction.atFraction must be between 0 and 1 (got 1.5)",
        ),
        ({"context": {"handoff": {"atFraction": 0}}}, "context.handoff.atFraction must be above 0 (got 0)"),
        (
            {"context": {"summarize": {"softFraction": 0.8, "hardFraction": 0.7}}},
            "context.summarize.hardFraction must be at least softFraction, 0.8 (got 0.7)",
        ),
        ({"context": {"toolOutput": {"maxChars": 0}}}, "context.toolOutput.maxChars must be greater than 0 (got 0)"),
        (
            {"context": {"toolOutput": {"maxChars": "12"}}},
            'context.toolOutput.maxChars must be a whole number (got "12")',
        ),
        ({"context": {"eviction": {"enabled": "yes"}}}, 'context.eviction.enabled must be true or false (got "yes")'),
        ({"models": {"main": {"maxRetries": -1}}}, "models.main.maxRetries must be at least 0 (got -1)"),
        ({"models": {"main": {"temperature": 3}}}, "models.main.temperature must be at most 2 (got 3)"),
        ({"models": {"fast": {"model": 5}}}, "models.fast.model must be a string (got 5)"),
        ({"models": {"main": {"model": ""}}}, 'models.main.model must not be empty (got "")'),
        (
            {"tools": {"python": {"approval": "always"}}},
            'tools.python.approval must be one of "ask", "auto" or "off" (got "always")',
        ),
        ({"models": {"embedding": {"provider": "cohere"}}}, "models.embedding.provider must be one of"),
        ({"agent": None}, "agent must be an object (got null)"),
        ({"store": {"storageOptions": {"allow_http": True}}}, "store.storageOptions.allow_http must be a string"),
        ({"context": {"redaction": {"hook": "my_module"}}}, 'context.redaction.hook must look like "module:function"'),
        (
            {
                "context": {
                    "redaction": {"patterns": [{"name": "ok", "regex": "a+"}, {"name": "aws", "regex": "(AKIA"}]}
                }
            },
            "context.redaction.patterns[1].regex is not a valid RE2 regular expression: "
            'missing ): (AKIA (pattern "aws")',
        ),
        ({"context": {"redaction": {"patterns": [{"regex": "a"}]}}}, "context.redaction.patterns[0].name is required"),
        (
            {"context": {"redaction": {"patterns": [{"name": "any", "regex": "a?"}]}}},
            "context.redaction.patterns[0].regex matches the empty string, so it would redact nothing",
        ),
        ({"context": {"eviction": {"atFraction": math.nan}}}, "context.eviction.atFraction must be a finite number"),
        ({"models": {"fast": {"temperature": math.inf}}}, "models.fast.temperature must be a finite number"),
        ({"agent": {"maxSteps": -(10**5000)}}, "agent.maxSteps is too large a number"),
        ({"models": {"embedding": {"baseUrl": "ftp://host/v1"}}}, "models.embedding.baseUrl must be an http://"),
        (
            {"models": {"fast": {"contextWindow": 4096, "maxOutputTokens": 8192}}},
            "models.fast.maxOutputTokens must be below contextWindow, 4096 (got 8192)",
        ),
        ({"tools": {"python": {"timeoutSeconds": 10**6}}}, "tools.python.timeoutSeconds must be at most 86400"),
        ({"store": {"storageOptions": {"region": "eu\x00"}}}, "store.storageOptions.region contains a NUL"),
        ({"agent": {"maxSteps": 3, "max_steps": 4}}, "key agent.maxSteps is given twice (as maxSteps and max_steps)"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_key(data, message):
    error = config_error(data)
    assert error.startswith(f"agents.json: {message}")
    assert "\n" not in error


KEY = "sk-proj-" + "T4kW9qZ2vB7xR1mN8pL3sD6f" * 3
SHORT_KEY = "Zq8Lr2Xw9Kp4Tn7VaB3dYc6"  # a provider's key with no known prefix: no rule would redact it


def pieces(secret: str, size: int = 8) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


@pytest.mark.parametrize("tier", ["main", "fast"])
@pytest.mark.parametrize("key", [KEY, SHORT_KEY])
def test_a_key_pasted_where_the_variable_name_belongs_is_refused_and_never_shown_back(tier, key):
    error = config_error({"models": {tier: {"apiKeyEnv": key}}})
    assert error.startswith(f"agents.json: models.{tier}.apiKeyEnv must be the name of the environment variable")
    assert "never the key itself" in error and "\n" not in error
    assert not any(piece in error for piece in pieces(key))
    assert parse_config({"models": {tier: {"apiKeyEnv": "MY_OPENAI_KEY"}}}).models.main is not None


def test_a_long_value_or_key_is_cut_before_any_run_that_could_be_a_key_never_inside_it():
    error = config_error({"models": {"main": {"baseUrl": f"ftp://{KEY}"}}})
    assert error.endswith('(got "ftp:...)') and not any(piece in error for piece in pieces(KEY))
    error = config_error({"models": {KEY: {}}})
    assert error.startswith("agents.json: unknown key models.<a key of 80 characters> (expected one of")
    short_words = config_error({"agent": {"maxSteps": "many " * 12}})
    assert short_words.endswith('(got "many many many many many many many m...)')


def test_an_unknown_key_suggests_the_close_one():
    assert (
        config_error({"context": {"evicton": {}}})
        == "agents.json: unknown key context.evicton (did you mean eviction?)"
    )
    assert config_error({"context": {"toolOutput": {"max_char": 1}}}).endswith("(did you mean maxChars?)")


def test_a_key_at_the_wrong_level_suggests_where_it_belongs():
    assert config_error({"eviction": {"enabled": False}}).endswith(
        "unknown key eviction (did you mean context.eviction?)"
    )


def test_an_unknown_key_with_nothing_close_lists_the_keys_allowed_there():
    error = config_error({"agent": {"colour": "blue"}})
    assert error == "agents.json: unknown key agent.colour (expected one of: name, maxSteps, systemPrompt)"


def test_several_errors_name_the_first_and_count_the_rest():
    error = config_error({"store": {"optimizeEveryWrites": -1}, "agent": {"maxSteps": 0, "systemPrompt": 1}})
    assert error.startswith("agents.json: store.optimizeEveryWrites must be greater than 0 (got -1)")
    assert error.endswith("(+2 more)")


def test_a_misspelt_key_is_reported_before_the_missing_one_it_explains():
    error = config_error({"context": {"redaction": {"patterns": [{"nmae": "x", "regex": "a"}]}}})
    assert error.startswith("agents.json: unknown key context.redaction.patterns[0].nmae (did you mean name?)")


def test_a_key_given_twice_is_named_with_its_whole_path(isolated_env):
    write(isolated_env / "agents.json", '{"context": {"redaction": {"patterns": [{"name": "a", "name": "b"}]}}}')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value) == "agents.json: key context.redaction.patterns[0].name appears twice: keep one"


def test_the_fast_tier_may_take_a_window_from_main_that_its_own_output_cap_exceeds():
    models = parse_config(
        {"models": {"main": {"model": "m", "contextWindow": 8000}, "fast": {"model": "m", "maxOutputTokens": 9000}}}
    ).models
    assert (models.resolved_fast().context_window, models.resolved_fast().max_output_tokens) == (8000, 9000)


def test_the_top_level_must_be_an_object(isolated_env):
    write(isolated_env / "agents.json", "[1, 2]")
    with pytest.raises(ConfigError, match=r"^agents\.json must hold a JSON object"):
        load_config()


def test_invalid_json_names_line_and_column(isolated_env):
    write(isolated_env / "agents.json", '{\n  "agent": {"maxSteps": 3},\n  "store" {}\n}\n')
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value) == "agents.json is not valid JSON: line 3 column 11: Expecting ':' delimiter"


def test_an_empty_file_says_how_to_fix_it(isolated_env):
    write(isolated_env / "agents.json", "  \n")
    with pytest.raises(ConfigError, match=r"agents\.json is empty: write \{\} for the defaults, or delete it"):
        load_config()


def test_errors_in_a_file_outside_the_working_directory_give_its_full_path():
    path = write(monad_home() / "agents.json", {"agent": {"maxSteps": -1}})
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert str(caught.value).startswith(f"{path}: agent.maxSteps")


def test_an_explicit_path_that_does_not_exist_is_an_error(isolated_env):
    with pytest.raises(ConfigError, match=r"custom\.json does not exist"):
        load_config(isolated_env / "custom.json")


# The fast tier


def test_fast_tier_inherits_every_key_it_does_not_set_from_main():
    models = parse_config(
        {
            "models": {
                "main": {"apiKeyEnv": "TEAM_KEY", "timeoutSeconds": 120, "temperature": 0.2},
                "fast": {"maxRetries": 1},
            }
        }
    ).models
    fast = models.resolved_fast()
    assert fast.model == "gpt-4.1-nano"
    assert (fast.api_key_env, fast.timeout_seconds, fast.temperature) == ("TEAM_KEY", 120, 0.2)
    assert fast.max_retries == 1


def test_fast_tier_reuses_mains_model_on_a_custom_endpoint():
    main = {"model": "llama3.1:8b", "baseUrl": "http://127.0.0.1:11434/v1", "contextWindow": 32768}
    fast = parse_config({"models": {"main": main}}).models.resolved_fast()
    assert (fast.model, fast.base_url, fast.context_window) == ("llama3.1:8b", "http://127.0.0.1:11434/v1", 32768)


def test_fast_tier_of_the_scripted_demo_is_the_scripted_demo():
    assert (
        parse_config({"models": {"main": {"model": "scripted-demo"}}}).models.resolved_fast().model == "scripted-demo"
    )


def test_fast_tier_does_not_borrow_the_window_of_a_different_model():
    config = parse_config({"models": {"main": {"contextWindow": 1_000_000, "maxOutputTokens": 4000}}})
    fast = config.models.resolved_fast()
    assert (fast.context_window, fast.max_output_tokens) == (None, None)
    assert config.to_json_dict()["models"]["fast"]["contextWindow"] is None


def test_effective_config_shows_the_fast_tier_resolved():
    data = parse_config({"models": {"main": {"baseUrl": "http://127.0.0.1:8000/v1"}}}).to_json_dict()
    assert data["models"]["fast"]["baseUrl"] == "http://127.0.0.1:8000/v1"


# Merging and overrides


def test_deep_merge_merges_objects_replaces_everything_else_and_leaves_inputs_alone():
    base = {"models": {"main": {"model": "a", "baseUrl": "u"}}, "tags": [1, 2]}
    over = {"models": {"main": {"model": "b"}}, "tags": [3]}
    assert deep_merge(base, over) == {"models": {"main": {"model": "b", "baseUrl": "u"}}, "tags": [3]}
    assert base == {"models": {"main": {"model": "a", "baseUrl": "u"}}, "tags": [1, 2]}


def test_overrides_merge_over_the_file_key_by_key(isolated_env):
    write(
        isolated_env / "agents.json", {"models": {"main": {"model": "file-model", "baseUrl": "http://127.0.0.1:1/v1"}}}
    )
    config = ConfigWatcher(overrides={"models": {"main": {"model": "override-model"}}}).current()
    assert (config.models.main.model, config.models.main.base_url) == ("override-model", "http://127.0.0.1:1/v1")


def test_a_snake_case_override_still_beats_the_files_camel_case_key(isolated_env):
    write(isolated_env / "agents.json", {"agent": {"maxSteps": 5}})
    assert ConfigWatcher(overrides={"agent": {"max_steps": 9}}).current().agent.max_steps == 9


def test_a_bad_override_is_reported_as_an_override():
    with pytest.raises(ConfigError, match=r"^overrides: agent\.maxSteps must be greater than 0"):
        ConfigWatcher(overrides={"agent": {"maxSteps": 0}})


def test_replacing_overrides_with_a_bad_value_changes_nothing():
    watcher = ConfigWatcher(overrides={"agent": {"maxSteps": 4}})
    with pytest.raises(ConfigError, match=r"agent\.maxSteps"):
        watcher.set_overrides({"agent": {"maxSteps": "many"}})
    assert watcher.current().agent.max_steps == 4
    assert watcher.set_overrides({"agent": {"maxSteps": 6}}).agent.max_steps == 6
    assert watcher.current().agent.max_steps == 6


# Hot reload


def test_a_changed_file_is_picked_up_on_the_next_read(isolated_env):
    path = write(isolated_env / "agents.json", {"context": {"eviction": {"atFraction": 0.5}}})
    watcher = ConfigWatcher()
    assert watcher.source == path
    assert watcher.current().context.eviction.at_fraction == 0.5
    write(path, {"context": {"eviction": {"atFraction": 0.4}}})
    touch_later(path)
    assert watcher.current().context.eviction.at_fraction == 0.4
    assert watcher.pop_warning() is None


def test_an_untouched_file_is_not_read_again(isolated_env):
    path = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    watcher = ConfigWatcher()
    stamp = path.stat()
    path.write_text(json.dumps({"agent": {"maxSteps": 9}}), encoding="utf-8")
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert watcher.current().agent.max_steps == 3


def test_a_broken_save_keeps_the_last_good_config_and_warns_once(isolated_env):
    path = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    watcher = ConfigWatcher()
    write(path, {"agent": {"maxSteps": 3}, "context": {"summarize": {"hardFraction": 2}}})
    touch_later(path)
    assert watcher.current().agent.max_steps == 3
    assert watcher.pop_warning() == (
        "agents.json: context.summarize.hardFraction must be between 0 and 1 (got 2)"
        " — the last good configuration is still in force"
    )
    assert watcher.current().agent.max_steps == 3
    assert watcher.pop_warning() is None
    write(path, {"agent": {"maxSteps": 8}})
    touch_later(path, 20)
    assert watcher.current().agent.max_steps == 8
    assert watcher.pop_warning() is None


def test_a_file_that_appears_is_used_and_one_that_disappears_falls_back(isolated_env):
    watcher = ConfigWatcher()
    assert watcher.source is None
    assert watcher.current().agent.max_steps == 24
    home_file = write(monad_home() / "agents.json", {"agent": {"maxSteps": 2}})
    assert watcher.current().agent.max_steps == 2
    local_file = write(isolated_env / "agents.json", {"agent": {"maxSteps": 5}})
    assert watcher.current().agent.max_steps == 5
    assert watcher.source == local_file
    local_file.unlink()
    assert watcher.current().agent.max_steps == 2
    assert watcher.source == home_file
    home_file.unlink()
    assert watcher.current().agent.max_steps == 24
    assert watcher.source is None


def test_an_explicit_file_that_disappears_keeps_the_last_good_config(isolated_env):
    path = write(isolated_env / "mine.json", {"agent": {"maxSteps": 4}})
    watcher = ConfigWatcher(path)
    path.unlink()
    assert watcher.current().agent.max_steps == 4
    assert "mine.json does not exist" in (watcher.pop_warning() or "")


def test_overrides_survive_a_reload(isolated_env):
    path = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    watcher = ConfigWatcher(overrides={"models": {"main": {"model": "scripted-demo"}}})
    write(path, {"agent": {"maxSteps": 11}})
    touch_later(path)
    config = watcher.current()
    assert (config.agent.max_steps, config.models.main.model) == (11, "scripted-demo")


def test_nothing_changed_means_the_very_same_config_object(isolated_env):
    path = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    watcher = ConfigWatcher()
    first = watcher.current()
    assert watcher.current() is first
    touch_later(path)
    assert watcher.current() is not first


def test_a_fixed_watcher_reads_no_file_but_takes_overrides(isolated_env):
    write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    given = parse_config({"models": {"main": {"baseUrl": "http://127.0.0.1:9/v1"}}})
    watcher = ConfigWatcher.fixed(given)
    assert watcher.current() is given
    assert watcher.source is None
    changed = watcher.set_overrides({"agent": {"maxSteps": 2}})
    assert changed.agent.max_steps == 2
    assert changed.models.resolved_fast().base_url == "http://127.0.0.1:9/v1"
    assert watcher.current() is changed


def test_a_rejected_config_hands_back_the_last_good_one_until_the_file_changes(isolated_env):
    path = write(isolated_env / "agents.json", {"agent": {"maxSteps": 3}})
    watcher = ConfigWatcher()
    good = watcher.current()
    write(path, {"agent": {"maxSteps": 7}})
    touch_later(path)
    unusable = watcher.current()
    warning = watcher.reject(unusable, ConfigError("agent.maxSteps is unusable"))
    assert warning == "agents.json: agent.maxSteps is unusable — the last good configuration is still in force"
    assert watcher.current() is good and watcher.pop_warning() is None
    write(path, {"agent": {"maxSteps": 9}})
    touch_later(path, 20)
    assert watcher.current().agent.max_steps == 9


def test_a_broken_file_at_start_must_be_fixed_first(isolated_env):
    write(isolated_env / "agents.json", '{"agent": ')
    with pytest.raises(ConfigError, match=r"agents\.json is not valid JSON"):
        ConfigWatcher()


# Documentation


def test_every_key_is_documented():
    docs = DOCS.read_text(encoding="utf-8")
    sample = parse_config({"context": {"redaction": {"patterns": [{"name": "n", "regex": "r"}]}}})
    missing = [path for path in flatten(sample.to_json_dict()) if f"`{path}`" not in docs]
    assert not missing, f"undocumented keys in docs/configuration.md: {missing}"
