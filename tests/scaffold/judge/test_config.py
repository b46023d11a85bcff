"""The judge's configuration: when it is on, what it inherits, and the credentials its process gets."""

from __future__ import annotations

from scaffold.judge.config import (
    MODEL_REQUIRED,
    JudgeConfig,
    agent_problem,
    judge_environment,
    messages_url,
    resolve_judge,
    scrub_environment,
)


def test_off_without_settings_or_switch() -> None:
    assert resolve_judge({}, {"BENCH_JUDGE_MODEL": "m"}) is None


def test_switch_values_turn_it_on() -> None:
    for value in ("1", "true", "YES", "on"):
        config = resolve_judge({}, {"BENCH_LLM_JUDGE": value, "BENCH_JUDGE_MODEL": "m"})
        assert config is not None and config.model == "m"
    assert resolve_judge({}, {"BENCH_LLM_JUDGE": "0"}) is None


def test_nothing_is_inherited_and_the_agent_defaults_to_claude_code() -> None:
    """Whatever the subject (an oracle or nop subject runs no model at all), the judge is Claude Code unless a
    setting names its agent, and it never takes the subject's model or API."""
    environ = {"BENCH_LLM_JUDGE": "1", "ANTHROPIC_MODEL": "subject-model", "ANTHROPIC_BASE_URL": "http://subject"}
    config = resolve_judge({}, environ)
    assert config is not None
    assert (config.agent, config.model, config.base_url, config.api_key) == ("claude-code", None, None, None)
    assert config.skip_reason == MODEL_REQUIRED


def test_url_and_key_alone_select_the_messages_api() -> None:
    """BENCH_JUDGE_* with a URL, a key and a model and no agent named: the Messages API directly, no CLI."""
    environ = {"BENCH_JUDGE_BASE_URL": "http://judge", "BENCH_JUDGE_API_KEY": "k", "BENCH_JUDGE_MODEL": "m"}
    config = resolve_judge({}, {"BENCH_LLM_JUDGE": "1", **environ})
    assert config is not None and (config.agent, config.transport) == ("claude-code", "http")


def test_only_claude_code_can_judge() -> None:
    assert agent_problem("claude-code") is None
    for agent in ("codex", "qoder", "codebuddy", "acme", "oracle"):
        problem = agent_problem(agent)
        assert problem is not None and problem.startswith(f"judge agent {agent!r}: only claude-code can judge")
        assert "--judge-agent=claude-code" in problem


def test_settings_win_over_the_environment() -> None:
    environ = {"BENCH_JUDGE_AGENT": "codex", "BENCH_JUDGE_MODEL": "env-model", "BENCH_JUDGE_BASE_URL": "http://e"}
    config = resolve_judge({"model": "cli-model"}, environ, samples=3)
    assert config is not None
    assert (config.agent, config.model, config.base_url, config.samples) == ("codex", "cli-model", "http://e", 3)


def test_transport_is_http_only_with_url_and_credential_for_claude_code() -> None:
    base = {"BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "m", "BENCH_JUDGE_BASE_URL": "http://x"}
    assert resolve_judge({}, base).transport == "cli"  # type: ignore[union-attr]
    keyed = {**base, "BENCH_JUDGE_API_KEY": "k"}
    assert resolve_judge({}, keyed).transport == "http"  # type: ignore[union-attr]


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


def _config(**environ: str) -> JudgeConfig:
    config = resolve_judge({}, {"BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "jm", **environ})
    assert config is not None
    return config


def test_claude_code_mapping_prefers_the_token() -> None:
    config = _config(BENCH_JUDGE_API_KEY="k", BENCH_JUDGE_AUTH_TOKEN="t", BENCH_JUDGE_BASE_URL="u")
    env = judge_environment(config, {"ANTHROPIC_API_KEY": "subject"})
    assert env["ANTHROPIC_AUTH_TOKEN"] == "t" and "ANTHROPIC_API_KEY" not in env
    assert (env["ANTHROPIC_BASE_URL"], env["ANTHROPIC_MODEL"]) == ("u", "jm")


def test_the_subjects_declared_credentials_never_reach_the_judge() -> None:
    env = judge_environment(_config(BENCH_JUDGE_API_KEY="k"), {"ACME_LOGIN": "subject"}, subject_secrets=["ACME_LOGIN"])
    assert env["ANTHROPIC_API_KEY"] == "k" and "subject" not in env.values()


def test_transport_cli_forces_the_cli() -> None:
    config = _config(BENCH_JUDGE_API_KEY="k", BENCH_JUDGE_BASE_URL="u", BENCH_JUDGE_TRANSPORT="cli")
    assert config.transport == "cli"
