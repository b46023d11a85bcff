"""``comet eval``: what TARGET and the options resolve to, every contradiction's message, and the
precedence of each setting (command line > manifest > process environment > ~/.comet/eval/.env > default)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from scaffold.catalog.treatments import CONTROL, DYNAMIC_SKILL
from scaffold.cli.eval.command import EvalPlan, UsageError, header_lines, plan_eval
from scaffold.cli.main import _parser, main
from scaffold.errors import CometError, ManifestError

INLINE = {
    "name": "writes-summary",
    "prompt": "Create summary.md with a short result.",
    "expect": {"files": ["summary.md"], "contains": {"summary.md": ["# Summary"]}},
}


def skill(root: Path, manifest: Mapping[str, object] | None = None, *, name: str = "my-skill") -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: a test skill\n---\nDo things.\n")
    if manifest is not None:
        (folder / "comet").mkdir()
        (folder / "comet" / "eval.yaml").write_text(yaml.safe_dump(dict(manifest)))
    return folder


def manifest_data(**sections: object) -> dict[str, object]:
    data: dict[str, object] = {
        "apiVersion": "comet.eval/v1alpha1",
        "kind": "SkillEvalManifest",
        "metadata": {"name": "my-eval"},
        "skill": {"name": "my-skill"},
        "evaluation": {"tasks": [INLINE]},
    }
    data.update(sections)
    return data


def args(*argv: str | Path) -> argparse.Namespace:
    return _parser(skill_commands=False).parse_args(["eval", *map(str, argv)])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A process environment of its own: no .env, no variables of the machine running the tests."""
    home = tmp_path / "eval-home"
    return {"COMET_EVAL_HOME": str(home), "HOME": str(tmp_path / "home"), "ANTHROPIC_API_KEY": "sk-test-000000"}


def plan(env: Mapping[str, str], *argv: str | Path) -> EvalPlan:
    return plan_eval(args(*argv), process_env=env)


# --- TARGET -----------------------------------------------------------------------------------------------


def test_a_skill_folder_with_eval_yaml_is_auto_detected(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data())
    for target in (folder, folder / "SKILL.md"):
        resolved = plan(env, target)
        assert resolved.manifest.source == "auto-detected"
        assert resolved.manifest.file == folder / "comet" / "eval.yaml"
        assert resolved.target == f"skill {folder}"
        assert resolved.tasks_source == "authored"
        assert resolved.tasks == (("writes-summary", "inline"),)
        assert resolved.owner == folder
        assert resolved.experiment_dir.is_relative_to(folder / ".comet" / "eval" / "runs")


def test_a_manifest_path_and_manifest_option_are_explicit(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data())
    for argv in ([folder / "comet" / "eval.yaml"], ["--manifest", folder / "comet" / "eval.yaml"]):
        resolved = plan(env, *argv)
        assert resolved.manifest.source == "explicit"
        assert resolved.target.startswith("manifest ")


def test_a_skill_without_eval_yaml_is_synthesized_and_awaits_generation(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path)
    for argv in ([folder], ["--skill-path", folder]):
        resolved = plan(env, *argv)
        assert resolved.manifest.source == "synthesized"
        assert resolved.manifest.skill.name == "my-skill"
        assert resolved.tasks_source == "pending generation"
        assert resolved.tasks == ()
    assert plan(env, folder, "--skill-name", "other").manifest.skill.name == "other"
    assert any("generates 2-4 tasks" in line for line in header_lines(plan(env, folder), mode="collect"))


def test_quick_and_task_select_before_the_manifest(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data(evaluation={"tasks": [INLINE], "recommendedTasks": ["fix-median"]}))
    merged = plan(env, folder)  # the manifest's own tasks and its recommended ones run together
    assert (merged.tasks_source, merged.tasks) == (
        "authored + recommended",
        (("writes-summary", "inline"), ("fix-median", "built-in (recommended)")),
    )
    quick = plan(env, folder, "--quick")
    assert (quick.tasks_source, quick.tasks) == ("quick", (("generic-skill-smoke", "built-in"),))
    chosen = plan(env, folder, "--task", "fix-median")
    assert (chosen.tasks_source, chosen.tasks) == ("command line", (("fix-median", "built-in (recommended)"),))
    recommended = skill(tmp_path / "r", manifest_data(evaluation={"recommendedTasks": ["fix-median"]}))
    assert plan(env, recommended).tasks_source == "recommended"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "name the skill to evaluate"),
        (["{skill}", "--manifest", "{manifest}"], "TARGET {skill} and --manifest {manifest} both name"),
        (["{skill}", "--skill-path", "{skill}"], "TARGET {skill} and --skill-path {skill} both name"),
        (["--manifest", "{manifest}", "--skill-path", "{skill}"], "--manifest {manifest} and --skill-path {skill}"),
        (["{skill}", "--skill-name", "other"], "--skill-name other contradicts skill.name 'my-skill'"),
        (["{skill}", "--quick", "--task", "x"], "--quick runs generic-skill-smoke only; --task x contradicts it"),
        (["{missing}"], "TARGET {missing}: no such file or folder"),
        (["{skill}/SKILL.txt"], "not a skill folder, a SKILL.md or a manifest"),
        (["{skill}", "--suite", "langfuse"], "--suite langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"),
        (["{skill}", "--suite", "nope"], "--suite nope: unknown suite"),
        (["{skill}", "--count", "0"], "--count 0: must be 1 or more"),
        (["{skill}", "-n", "0"], "--workers 0: must be 1 or more"),
        (["{skill}", "--task", "nope"], "--task nope: no such task; known:"),
        (["{skill}", "--treatment", "SKILL_X"], "--treatment SKILL_X: comet eval runs CONTROL and DYNAMIC_SKILL"),
        (["{skill}", "--baseline", "OTHER"], "--baseline OTHER: not one of the treatments run"),
        (["{skill}", "--agent", "nope"], "--agent nope: unknown agent; known:"),
        (["{skill}", "--base-url", "ftp://x"], "--base-url 'ftp://x': must be an absolute http(s) URL"),
        (["{skill}", "--judge-agent", "nope"], "--judge-agent nope: unknown agent"),
        (["{skill}", "--judge-base-url", "nope"], "--judge-base-url 'nope': must be an absolute http(s) URL"),
        (["{skill}", "--experiment-id", "../x"], "--experiment-id '../x': use letters"),
    ],
)
def test_contradictions_and_bad_options_are_usage_errors_naming_both(
    tmp_path: Path, env: dict[str, str], argv: list[str], message: str
) -> None:
    folder = skill(tmp_path, manifest_data())
    (folder / "SKILL.txt").write_text("x")
    values = {"skill": str(folder), "manifest": str(folder / "comet" / "eval.yaml"), "missing": str(tmp_path / "no")}
    with pytest.raises(UsageError) as info:
        plan(env, *[a.format(**values) for a in argv])
    assert message.format(**values) in str(info.value)


def test_a_bad_gate_and_a_reporting_suite_mismatch_are_usage_errors(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data(reporting={"suite": "langfuse"}))
    with pytest.raises(UsageError, match=r"reporting\.suite is 'langfuse' in .*, but the selected suite is 'local'"):
        plan(env, folder, "--suite", "local")
    with pytest.raises(UsageError, match="--suite langfuse needs LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"):
        plan(env, folder)
    keys = {**env, "LANGFUSE_PUBLIC_KEY": "pk-lf-test-0000", "LANGFUSE_SECRET_KEY": "sk-lf-test-0000"}
    assert plan(keys, folder).suite == "langfuse"  # reporting.suite selects the suite
    good = skill(tmp_path / "g", manifest_data())
    with pytest.raises(CometError, match="gate"):
        plan(env, good, "--gate", "this is no gate")


def test_an_invalid_manifest_is_a_usage_error_with_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, env: dict[str, str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    bad = manifest_data(
        evaluation={"tasks": [{"name": "t", "prompt": "p", "expect": {}}, {"name": "t", "prompt": "q"}]}
    )
    folder = skill(tmp_path, bad)
    with pytest.raises(ManifestError):
        plan(env, folder)
    assert main(["eval", str(folder), "--collect"]) == 2
    err = capsys.readouterr().err
    assert "evaluation.tasks" in err and "Traceback" not in err


# --- precedence ---------------------------------------------------------------------------------------------


def test_agent_precedence_each_level(tmp_path: Path, env: dict[str, str]) -> None:
    home = Path(env["COMET_EVAL_HOME"])
    home.mkdir()
    plain = skill(tmp_path / "a", manifest_data())
    with_execution = skill(tmp_path / "b", manifest_data(execution={"agent": "codex"}))
    env["OPENAI_API_KEY"] = "sk-test-111111"
    assert (plan(env, plain).agent.value, plan(env, plain).agent.source) == ("claude-code", "default")
    (home / ".env").write_text("BENCH_EVAL_AGENT=nop\n")
    assert plan(env, plain).agent.value == "nop"
    assert plan(env, plain).agent.source == f"{home / '.env'} (BENCH_EVAL_AGENT)"
    assert plan({**env, "BENCH_EVAL_AGENT": "oracle"}, plain).agent.value == "oracle"  # the process wins
    assert plan({**env, "BENCH_EVAL_AGENT": ""}, plain).agent.value == "nop"  # an empty value never overrides
    assert plan({**env, "BENCH_EVAL_AGENT": "oracle"}, with_execution).agent.value == "codex"  # manifest > env
    assert plan(env, with_execution, "--agent", "oracle").agent.value == "oracle"  # command line > manifest


def test_model_and_base_url_precedence(tmp_path: Path, env: dict[str, str]) -> None:
    plain = skill(tmp_path / "a", manifest_data())
    declared = skill(
        tmp_path / "b", manifest_data(execution={"model": "manifest-model", "baseUrl": "https://manifest.example/v1"})
    )
    assert plan(env, plain).model.value is None
    assert "default" in header_lines(plan(env, plain), mode="collect")[8]
    from_env = plan({**env, "BENCH_CC_MODEL": "env-model", "ANTHROPIC_BASE_URL": "http://env.example"}, plain)
    assert (from_env.model.value, from_env.base_url.value) == ("env-model", "http://env.example")
    over_env = plan({**env, "BENCH_CC_MODEL": "env-model"}, declared)
    assert (over_env.model.value, over_env.model.source) == ("manifest-model", "manifest")
    assert over_env.base_url.value == "https://manifest.example/v1"
    cli = plan(env, declared, "--model", "cli-model", "--base-url", "https://cli.example")
    assert (cli.model.value, cli.base_url.value) == ("cli-model", "https://cli.example")
    assert "API:" in "\n".join(header_lines(cli, mode="run"))
    assert "https://cli.example" not in "\n".join(header_lines(cli, mode="run"))  # "custom", never the URL


def test_judge_precedence_and_enabling(tmp_path: Path, env: dict[str, str]) -> None:
    plain = skill(tmp_path / "a", manifest_data())
    assert plan(env, plain).judge is None  # not enabled: nothing about a judge
    enabled = plan({**env, "BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "env-judge"}, plain).judge
    assert enabled is not None
    assert (enabled[0].value, enabled[1].value, enabled[1].source) == (
        "claude-code",
        "env-judge",
        "environment (BENCH_JUDGE_MODEL)",
    )
    missing = plan({**env, "BENCH_LLM_JUDGE": "1"}, plain)
    assert any(line.endswith("missing") for line in header_lines(missing, mode="collect"))
    declared = skill(tmp_path / "b", manifest_data(judge={"agent": "codex", "model": "manifest-judge"}))
    from_manifest = plan({**env, "BENCH_JUDGE_MODEL": "env-judge"}, declared).judge
    assert from_manifest is not None
    assert (from_manifest[0].value, from_manifest[1].value) == ("codex", "manifest-judge")
    cli = plan(env, declared, "--judge-model", "cli-judge", "--judge-base-url", "https://judge.example").judge
    assert cli is not None
    assert (cli[1].value, cli[2].value) == ("cli-judge", "https://judge.example")


def test_profile_report_config_and_backend_precedence(tmp_path: Path, env: dict[str, str]) -> None:
    declared = skill(tmp_path / "b", manifest_data(skill={"name": "my-skill", "profile": "generic"}))
    resolved = plan(env, declared)
    assert (resolved.profile.value, resolved.profile.source) == ("generic", "manifest")
    assert plan(env, declared, "--profile", "comet-workflow").profile.source == "command line"
    assert plan(env, declared).backend.value == "local"
    assert plan(env, declared, "--backend", "docker").backend.value == "docker"
    config = tmp_path / "r.json"
    config.write_text('{"report_outputs": {"html": true}}')  # read as the run reads it: it must exist
    assert plan({**env, "COMET_EVAL_REPORT_CONFIG": str(config)}, declared).report_config.source.startswith(
        "environment"
    )
    assert plan(env, declared, "--report-config", config).report_config.source == "command line"


def test_treatments_are_control_and_the_skill(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data())
    assert plan(env, folder).treatments == (CONTROL, DYNAMIC_SKILL)
    assert plan(env, folder, "--treatment", "DYNAMIC*").treatments == (DYNAMIC_SKILL,)


def test_missing_credentials_are_reported_not_fatal_to_collect(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data())
    del env["ANTHROPIC_API_KEY"]
    resolved = plan(env, folder)
    assert resolved.credentials_problem is not None and "ANTHROPIC_API_KEY" in resolved.credentials_problem


def test_an_agent_program_not_installed_is_reported(tmp_path: Path, env: dict[str, str]) -> None:
    folder = skill(tmp_path, manifest_data())
    resolved = plan({**env, "PATH": str(tmp_path / "empty")}, folder, "--agent", "codex")
    assert resolved.credentials_problem is None or "needs credentials" in resolved.credentials_problem
    resolved = plan(
        {**env, "PATH": str(tmp_path / "empty"), "OPENAI_API_KEY": "sk-test-222222"}, folder, "--agent", "codex"
    )
    assert resolved.credentials_problem is not None
    assert "its program 'codex' is not installed" in resolved.credentials_problem
    assert any(line.startswith("Agent check:") for line in header_lines(resolved, mode="collect"))
    assert plan(env, folder, "--agent", "oracle").credentials_problem is None  # runs no program


@pytest.mark.parametrize(
    ("sections", "extra_env", "argv"),
    [
        ({}, {}, ()),
        ({}, {"BENCH_CC_MODEL": "env-model", "ANTHROPIC_BASE_URL": "http://env.example"}, ()),
        ({"skill": {"name": "my-skill", "profile": "generic"}}, {}, ()),
        ({"execution": {"agent": "codex", "model": "m"}}, {"OPENAI_API_KEY": "sk-test-2"}, ()),
        ({}, {"BENCH_LLM_JUDGE": "1", "BENCH_JUDGE_MODEL": "env-judge"}, ()),
        ({"judge": {"agent": "codex", "model": "j"}}, {}, ("--judge-base-url", "https://judge.example")),
        ({}, {"BENCH_EVAL_AGENT": "nop"}, ("--model", "cli-model", "--profile", "generic")),
    ],
)
def test_pytest_eval_manifest_resolves_as_comet_eval_does(
    tmp_path: Path, env: dict[str, str], sections: dict[str, object], extra_env: dict[str, str], argv: tuple[str, ...]
) -> None:
    """``pytest --eval-manifest`` and ``comet eval`` are one resolution: the same agent (default
    claude-code), model and API (the agent's own variables included), profile and judge."""
    from scaffold.agents.credentials import load_environment
    from scaffold.session import HarnessSession, Options

    env.update(extra_env)
    folder = skill(tmp_path, manifest_data(**sections))
    command = plan(env, folder, *argv)
    given = dict(zip(argv[::2], argv[1::2], strict=True))
    session = HarnessSession(
        Options(
            root=tmp_path,
            manifest=folder / "comet" / "eval.yaml",
            agent="",
            model=given.get("--model"),
            profile=given.get("--profile"),
            judge_base_url=given.get("--judge-base-url"),
        ),
        environ=load_environment(env),
    ).resolved
    judge = tuple(c.value for c in command.judge) if command.judge else (None, None, None)
    assert (session.agent, session.model, session.base_url, session.profile) == (
        command.agent.value,
        command.model.value,
        command.base_url.value,
        command.profile.value,
    )
    assert (session.judge_agent, session.judge_model, session.judge_base_url) == judge
    assert session.skill_path == folder
