"""Running the real SDKs against a trace server: each in its own process, as the suites do.

The SDKs keep process-wide state (Langfuse's OpenTelemetry tracer provider, LangSmith's cached client
and test suites), so every run gets a fresh interpreter and an environment holding only what it is
given: nothing of the outer test session (its own pytest or xdist variables) leaks in.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LANGFUSE_PUBLIC_KEY = "pk-lf-planted-4f1c9e"
LANGFUSE_SECRET_KEY = "sk-lf-planted-8d2b7a"
LANGSMITH_API_KEY = "lsv2_pt_planted_c0ffee1234"
PLANTED = (LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY, LANGSMITH_API_KEY)

_DROP = ("LANGSMITH_", "LANGCHAIN_", "LANGFUSE_", "PYTEST_", "OTEL_", "COMET_")


def clean_env(extra: Mapping[str, str]) -> dict[str, str]:
    # Bytecode is left to the caller's setting: each of these processes loads the SDK's pytest plugin, and
    # pytest re-parses the SDK's whole package (about 270 modules) in every one that may not cache it.
    env = {k: v for k, v in os.environ.items() if not k.startswith(_DROP)}
    return {**env, **extra}


# One trial as the Langfuse suite reports it: a comet.eval.run span with a child observation, its
# output set afterwards, then BOOLEAN and NUMERIC scores on it, and a flush.
LANGFUSE_TRIAL = r"""
import json, sys
from langfuse import Langfuse

url, public_key, secret_key = sys.argv[1:4]
client = Langfuse(public_key=public_key, secret_key=secret_key, base_url=url, environment="ci")
try:
    auth = client.auth_check()
except Exception as exc:
    auth = f"{type(exc).__name__}"
with client.start_as_current_observation(
    as_type="span", name="comet.eval.run", input={"task": "hello", "treatment": "baseline", "experiment_id": "exp1"}
) as run:
    with client.start_as_current_observation(as_type="span", name="agent.turn/1", input={"prompt": "go"}) as turn:
        with client.start_as_current_observation(as_type="tool", name="agent.tool_call/Bash/1") as tool:
            tool.update(output={"exit_code": 0})
        turn.update(output={"text": "done"})
    run.update(output={"passed": True, "checks_passed": 3, "checks_failed": 1}, metadata={"experiment_id": "exp1"})
    trace_id, run_id = run.trace_id, run.id
client.create_score(name="comet.passed", value=True, trace_id=trace_id, observation_id=run_id, data_type="BOOLEAN")
client.create_score(
    name="comet.checks_pass_rate", value=0.75, trace_id=trace_id, observation_id=run_id, data_type="NUMERIC"
)
client.flush()
client.shutdown()
print(json.dumps({"auth": auth, "trace_id": trace_id, "run_id": run_id}))
"""


def run_langfuse_trial(url: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """Run one reported trial; returns what the script printed and its stderr (the SDK's own log)."""
    script = tmp_path / "langfuse_trial.py"
    script.write_text(LANGFUSE_TRIAL)
    done = subprocess.run(
        [sys.executable, str(script), url, LANGFUSE_PUBLIC_KEY, LANGFUSE_SECRET_KEY],
        cwd=tmp_path,
        env=clean_env({}),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


# A suite as the LangSmith suite runs one: the SDK's pytest plugin, two cases, one failing.
LANGSMITH_TESTS = r"""
import pytest
from langsmith import testing

@pytest.mark.langsmith
@pytest.mark.parametrize("task", ["hello", "broken"])
def test_task_treatment(task):
    testing.log_inputs({"task": task, "treatment": "baseline", "difficulty": "easy"})
    testing.log_reference_outputs({"expected_artifacts": ["result.md"], "required_skills": ["greet"]})
    passed = task == "hello"
    testing.log_outputs({"passed": passed, "checks_passed": 3 if passed else 1, "checks_failed": 0 if passed else 1})
    testing.log_feedback(key="checks_pass_rate", score=1.0 if passed else 0.5)
    testing.log_feedback(key="rubric.task_completion", score=0.9 if passed else 0.2)
    assert passed
"""


def run_langsmith_suite(url: str, tmp_path: Path, *args: str, suite: str = "comet-traceserver-test") -> str:
    """Run the tiny suite with the SDK's pytest plugin against *url*; returns pytest's output."""
    (tmp_path / "test_suite.py").write_text(LANGSMITH_TESTS)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    env = clean_env(
        {
            "LANGSMITH_ENDPOINT": url,
            "LANGSMITH_API_KEY": LANGSMITH_API_KEY,
            "LANGSMITH_TRACING": "true",
            "LANGSMITH_TEST_SUITE": suite,
        }
    )
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:pytest_comet", *args]
    done = subprocess.run(
        [*cmd, "test_suite.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    # One case fails on purpose (the automatic `pass` feedback is 0 for it): exit status 1.
    assert done.returncode == 1, done.stdout + done.stderr
    return done.stdout + done.stderr
