"""The judge's configuration: when it is on, what it inherits, and the credentials its process gets."""

from __future__ import annotations

from scaffold.judge.config import (
    MODEL_REQUIRED,
    judge_environment,
    messages_url,
    resolve_judge,
    scrub_environment,
)


def test_off_without_settings_or_switch() -> None:
    assert resolve_judge({}, {"BENCH_JUDGE_MODEL": "m"}, subject_agent="codex") is None


def test_switch_values_turn_it_on() -> None:
    for value in ("1", "true", "YES", "on"):
        config = resolve_judge({}, {"BENCH_LLM_JUDGE": value, "BENCH_JUDGE_MODEL": "m"}, subject_agent="codex")
        assert config is not None and config.model == "m"
    assert resolve_judge({}, {"BENCH_LLM_JUDGE": "0"}, subject_agent="codex") is None


def test_only_the_agent_id_is_inherited() -> None:
    environ = {"BENCH_LLM_JUDGE": "1", "ANTHROPIC_MODEL": "subject-model", "ANTHROPIC_BASE_URL": "http://subject"}
    config = resolve_judge({}, environ, subject_agent="claude-code")
    assert config is not None
    assert (config.agent, config.model, config.base_url, config.api_key) == ("claude-code", None, None, None)
    assert config.skip_reason == MODEL_REQUIRED


def test_settings_win_over_the_environment() -> None:
    environ = {"BENCH_JUDGE_AGENT": "codex", "BENCH_JUDGE_MODEL": "env-model", "BENCH_JUDGE_BASE_URL": "http://e"}
    config = resolve_judge({"model": "cli-model"}, environ, subject_agent="claude-code", samples=3)
    assert config is not None
    assert (config.agent, config.model, config.base_url, config.samples) == ("codex", "cli-model", "http://e", 3)


def test_transport_is_http_only_with_url_and_credential_for_claude_code() -> None:
    base = {"BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "m", "BENCH_JUDGE_BASE_URL": "http://x"}
    assert resolve_judge({}, base, subject_agent="claude-code").transport == "cli"  # type: ignore[union-attr]
    keyed = {**base, "BENCH_JUDGE_API_KEY": "k"}
    assert resolve_judge({}, keyed, subject_agent="claude-code").transport == "http"  # type: ignore[union-attr]
    assert resolve_judge({}, keyed, subject_agent="codex").transport == "cli"  # type: ignore[union-attr]


def test_messages_url() -> None:
    assert messages_url("http://h/v1/messages") == "http://h/v1/messages"
    assert messages_url("http://h/v1/") == "http://h/v1/messages"
    assert messages_url("http://h/api") == "http://h/api/v1/messages"


def test_scrub_removes_every_credential_and_provider_variable() -> None:
    environ = {
        "PATH": "/bin",
        "ANTHROPIC_BASE_URL": "u",
        "OPENAI_ORG": "o",
        "CODEBUDDY_MODEL": "c",
        "MY_AGENT_SECRET": "s",
        "GITHUB_TOKEN": "t",
        "SOME_CREDENTIALS": "c",
        "ACME_LOGIN": "declared",
        "BENCH_MODEL": "subject",
        "LANG": "C",
    }
    assert scrub_environment(environ, ["ACME_LOGIN"]) == {"PATH": "/bin", "LANG": "C"}


def _config(agent: str, **environ: str):  # type: ignore[no-untyped-def]
    config = resolve_judge({}, {"BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "jm", **environ}, subject_agent=agent)
    assert config is not None
    return config


def test_claude_code_mapping_prefers_the_token() -> None:
    config = _config("claude-code", BENCH_JUDGE_API_KEY="k", BENCH_JUDGE_AUTH_TOKEN="t", BENCH_JUDGE_BASE_URL="u")
    env = judge_environment(config, {"ANTHROPIC_API_KEY": "subject"})
    assert env["ANTHROPIC_AUTH_TOKEN"] == "t" and "ANTHROPIC_API_KEY" not in env
    assert (env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_MODEL"]) == ("u", "jm")


def test_codex_qoder_codebuddy_mappings() -> None:
    env = judge_environment(_config("codex", BENCH_JUDGE_API_KEY="k", BENCH_JUDGE_BASE_URL="u"), {})
    assert (env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"]) == ("k", "u")
    assert judge_environment(_config("qoder", BENCH_JUDGE_API_KEY="k"), {})["QODER_PERSONAL_ACCESS_TOKEN"] == "k"
    env = judge_environment(_config("codebuddy", BENCH_JUDGE_AUTH_TOKEN="t"), {})
    assert (env["CODEBUDDY_AUTH_TOKEN"], env["CODEBUDDY_MODEL"]) == ("t", "jm")


def test_custom_adapter_either_judge_variable_fills_both_credentials() -> None:
    config = _config("acme", BENCH_JUDGE_AUTH_TOKEN="t")
    env = judge_environment(
        config,
        {"ACME_KEY": "subject", "ACME_MODEL_NAME": "subject-model"},
        subject_secrets=["ACME_KEY"],
        custom_credentials=["ACME_KEY", "ACME_SESSION"],
        model_env=["ACME_MODEL_NAME"],
    )
    assert (env["ACME_KEY"], env["ACME_SESSION"], env["ACME_MODEL_NAME"]) == ("t", "t", "jm")
    assert "subject" not in env.values()


def test_transport_cli_forces_the_cli() -> None:
    config = _config("claude-code", BENCH_JUDGE_API_KEY="k", BENCH_JUDGE_BASE_URL="u", BENCH_JUDGE_TRANSPORT="cli")
    assert config.transport == "cli"
