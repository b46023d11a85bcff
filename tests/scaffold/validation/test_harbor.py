"""Reading a Harbor verifier's results (reward.txt, reward.json, ctrf.json) and the uv stand-in's uvx."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaffold.catalog.tasks import HarborSettings, Task, TaskSpec
from scaffold.validation.harbor import (
    UV_SETUP,
    UVX_NOTES,
    ctrf_checks,
    parse_ctrf,
    parse_reward,
    uv_shim_needed,
    uvx_checks,
)
from scaffold.validation.results import ValidationCheck, ValidationOutcome


def test_reward_txt_comes_first_and_is_a_number() -> None:
    assert parse_reward(b"0.5\n", b'{"reward": 1}') == (0.5, "reward.txt")
    assert parse_reward(b"1", None) == (1.0, "reward.txt")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        (b"", "reward.txt is empty"),
        (b"  \n", "reward.txt is empty"),
        (b"yes", "not a number"),
        (b"nan", "not a number"),
    ],
)
def test_an_empty_or_unreadable_reward_txt_is_no_reward(text: bytes, why: str) -> None:
    reward, source = parse_reward(text, b'{"reward": 1}')
    assert reward is None
    assert why in source


def test_reward_json_its_reward_entry_else_its_only_one_else_the_mean() -> None:
    assert parse_reward(None, b'{"reward": 0.25, "other": 1}') == (0.25, "reward.json (reward)")
    assert parse_reward(None, b'{"accuracy": 0.75}') == (0.75, "reward.json (accuracy)")
    value, source = parse_reward(None, b'{"a": 1, "b": 0}')
    assert value == 0.5
    assert source == "reward.json (mean of a, b)"


@pytest.mark.parametrize("data", [b"", b"not json", b'{"a": "x"}', b"[1, 2]", b'{"a": true}', b"true", b"{}"])
def test_reward_json_without_a_number_is_no_reward(data: bytes) -> None:
    assert parse_reward(None, data)[0] is None


def test_no_reward_file_names_both() -> None:
    reward, source = parse_reward(None, None)
    assert reward is None
    assert "reward.txt" in source
    assert "reward.json" in source


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_any_finite_number_written_is_read_back(value: float) -> None:
    assert parse_reward(repr(value).encode(), None) == (value, "reward.txt")
    assert parse_reward(None, json.dumps({"score": value}).encode()) == (value, "reward.json (score)")


@given(st.binary(max_size=64), st.one_of(st.none(), st.binary(max_size=64)))
def test_parse_reward_never_raises(text: bytes, data: bytes | None) -> None:
    reward, source = parse_reward(text, data)
    assert reward is None or isinstance(reward, float)
    assert source


def test_ctrf_tests_become_named_checks() -> None:
    report = {
        "results": {
            "tool": {"name": "pytest"},
            "summary": {"tests": 4},
            "tests": [
                {"name": "test_a", "status": "passed", "duration": 1},
                {"name": "test_b", "status": "failed", "duration": 1, "message": "assert 1 == 2"},
                {"name": "test_c", "status": "skipped", "duration": 0},
                {"name": "test_d", "status": "pending", "duration": 0},
            ],
        }
    }
    checks = parse_ctrf(json.dumps(report).encode())
    assert checks == [
        ValidationCheck("test_a", "passed", "ctrf", ""),
        ValidationCheck("test_b", "failed", "ctrf", "assert 1 == 2"),
        ValidationCheck("test_c", "skipped", "ctrf", ""),
        ValidationCheck("test_d", "skipped", "ctrf", ""),
    ]


def ctrf(*tests: tuple[str, str]) -> bytes:
    return json.dumps({"results": {"tests": [{"name": n, "status": s} for n, s in tests]}}).encode()


def test_every_ctrf_file_becomes_checks_named_apart() -> None:
    files = {
        "ctrf.json": ctrf(("test_outputs.py::test_fix", "passed"), ("test_outputs.py::test_fix", "failed")),
        "ctrf_performance.json": ctrf(("test_speed", "failed")),
        "original-repo-ctrf.json": ctrf(("test_outputs.py::test_fix", "passed")),
        "reward.txt": b"0\n",
        "sub/ctrf.json": ctrf(("nested", "passed")),  # only the folder's own files are reports
        "summary.json": ctrf(("not a ctrf file", "passed")),
    }

    checks = ctrf_checks(files)

    assert [(c.name, c.status, c.source) for c in checks] == [
        ("test_outputs.py::test_fix", "passed", "ctrf"),
        ("test_outputs.py::test_fix (2)", "failed", "ctrf"),
        ("ctrf_performance: test_speed", "failed", "ctrf:ctrf_performance.json"),
        ("original-repo-ctrf: test_outputs.py::test_fix", "passed", "ctrf:original-repo-ctrf.json"),
    ]
    # One report alone keeps its tests' names; a second one without ctrf.json keeps its prefix.
    assert next(c.name for c in ctrf_checks({"ctrf.json": files["ctrf.json"]})) == "test_outputs.py::test_fix"
    assert [c.name for c in ctrf_checks({"ctrf_performance.json": files["ctrf_performance.json"]})] == [
        "ctrf_performance: test_speed"
    ]


@given(st.lists(st.tuples(st.sampled_from(["ctrf.json", "b-ctrf.json", "ctrf_x.json"]), st.text(max_size=8))))
def test_ctrf_check_names_are_unique(tests: list[tuple[str, str]]) -> None:
    files: dict[str, list[tuple[str, str]]] = {}
    for file, name in tests:
        files.setdefault(file, []).append((name, "passed"))
    names = [c.name for c in ctrf_checks({f: ctrf(*t) for f, t in files.items()})]
    assert len(names) == len(set(names)) == len(tests)


@pytest.mark.parametrize("data", [None, b"", b"{", b"[]", b'{"results": {"tests": "x"}}'])
def test_a_ctrf_file_of_another_shape_gives_no_checks(data: bytes | None) -> None:
    assert parse_ctrf(data) == []


def test_the_reward_decides_the_outcome() -> None:
    failed_check = (ValidationCheck("test_b", "failed", "ctrf"),)
    assert ValidationOutcome(failed_check, reward=1.0).all_passed
    assert not ValidationOutcome((ValidationCheck("t", "passed", "ctrf"),), reward=0.5).all_passed
    assert ValidationOutcome(failed_check, reward=0.5).pass_rate == 0.5
    assert ValidationOutcome(failed_check, reward=3.0).pass_rate == 1.0


def _task(tmp_path: Path, script: str, uv_shim: str = "auto") -> Task:
    (tmp_path / "tests").mkdir(parents=True, exist_ok=True)
    (tmp_path / "tests" / "test.sh").write_text(script, encoding="utf-8")
    spec = TaskSpec.model_validate({"metadata": {"name": tmp_path.name}})
    return Task(tmp_path.name, tmp_path, spec, format="harbor", harbor=HarborSettings(uv_shim=uv_shim))  # type: ignore[arg-type]


def test_the_uv_stand_in_goes_where_the_verifier_bootstraps_uv(tmp_path: Path) -> None:
    tb2 = "curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh\nsource $HOME/.local/bin/env\nuvx pytest\n"
    assert uv_shim_needed(_task(tmp_path / "a", tb2))
    assert not uv_shim_needed(_task(tmp_path / "b", "pytest /tests\n"))
    assert uv_shim_needed(_task(tmp_path / "c", "pytest /tests\n", "always"))
    assert not uv_shim_needed(_task(tmp_path / "d", tb2, "never"))


def _uvx(tmp_path: Path) -> Path:
    """The stand-in's uvx wrapper, with uv replaced by a script that prints its arguments."""
    body = UV_SETUP.split("<<'EOF'\n", 1)[1].split("\nEOF\n", 1)[0]
    fake = tmp_path / "uv"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "[%s]" "$a"; done\n', encoding="utf-8")
    fake.chmod(0o755)
    wrapper = tmp_path / "uvx"
    body = body.replace("/opt/comet-uv/uv", str(fake)).replace(f"/logs/verifier/{UVX_NOTES}", str(_notes(tmp_path)))
    wrapper.write_text(body, encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def _notes(tmp_path: Path) -> Path:
    """Where the test's uvx wrapper notes a Python served instead of the one asked for (the verifier's
    /logs/verifier in a container)."""
    return tmp_path / "logs" / "verifier" / UVX_NOTES


def _curl(tmp_path: Path) -> Path:
    """The stand-in's curl wrapper, as UV_SETUP writes it to /usr/local/bin/curl."""
    body = UV_SETUP.split("<<'CURL'", 1)[1].split("\n", 1)[1].split("\nCURL\n", 1)[0]
    wrapper = tmp_path / "curl"
    wrapper.write_text(body + "\n", encoding="utf-8")
    wrapper.chmod(0o755)
    return wrapper


def test_curl_answers_the_uv_installer_with_one_that_does_nothing(tmp_path: Path) -> None:
    curl = _curl(tmp_path)
    url = "https://astral.sh/uv/0.9.7/install.sh"
    # `set -euo pipefail; curl -LsSf URL | sh`, as SkillsBench's manufacturing verifiers write it.
    piped = subprocess.run(
        ["bash", "-c", f"set -euo pipefail; {curl} -LsSf {url} | sh"], capture_output=True, text=True, check=False
    )
    assert piped.returncode == 0, piped.stderr
    assert "uv and uvx are the local stand-in" in piped.stdout
    subprocess.run([str(curl), "-LsSf", url, "-o", str(tmp_path / "install.sh")], check=True)
    assert subprocess.run(["sh", str(tmp_path / "install.sh")], capture_output=True, check=False).returncode == 0


def test_curl_leaves_every_other_request_to_the_real_one(tmp_path: Path) -> None:
    real = next((c for c in ("/usr/bin/curl", "/bin/curl") if Path(c).is_file()), None)
    done = subprocess.run([str(_curl(tmp_path)), "--version"], capture_output=True, text=True, check=False)
    if real is None:
        assert done.returncode == 127 and "command not found" in done.stderr
    else:
        assert done.returncode == 0 and done.stdout.startswith("curl ")


def test_uvx_keeps_the_command_and_its_own_options_in_order(tmp_path: Path) -> None:
    wrapper = _uvx(tmp_path)
    argv = ["-w", "pytest==8.4.1", "--with", "a b", "pytest", "-p", "no:cacheprovider", "--ctrf", "/x"]
    out = subprocess.run([str(wrapper), *argv], capture_output=True, text=True, check=True).stdout
    assert out == "[tool][run]" + "".join(f"[{a}]" for a in argv)


def test_uvx_asks_for_an_installed_python_instead_of_a_download(tmp_path: Path) -> None:
    wrapper = _uvx(tmp_path)
    out = subprocess.run(
        [str(wrapper), "-p", "3.99", "-w", "x", "pytest", "-p", "3.99"], capture_output=True, text=True, check=True
    ).stdout
    python3 = shutil.which("python3")
    assert out == f"[tool][run][--python][{python3}][-w][x][pytest][-p][3.99]"


def _python3_version() -> str:
    """The version of the python3 on PATH: the one the wrapper serves."""
    argv = ["python3", "-c", "import platform; print(platform.python_version())"]
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.strip()


def test_uvx_notes_a_python_it_serves_instead_of_the_one_asked_for(tmp_path: Path) -> None:
    wrapper = _uvx(tmp_path)
    served = _python3_version()
    for argv in (["-p", "3.99", "pytest"], ["--python=3.99", "-w", "x", "pytest"]):
        subprocess.run([str(wrapper), *argv], capture_output=True, check=True)
    assert _notes(tmp_path).read_text().splitlines() == [f"uvx asked for Python 3.99, got {served}"] * 2
    # In the record: one skipped check (never counted), each drift said once.
    (check,) = uvx_checks(_notes(tmp_path).read_bytes())
    assert (check.name, check.status, check.source) == ("uvx python", "skipped", "uv-shim")
    assert check.reason == f"uvx asked for Python 3.99, got {served}"


def test_uvx_notes_nothing_when_it_serves_what_was_asked_for(tmp_path: Path) -> None:
    wrapper = _uvx(tmp_path)
    major_minor = ".".join(_python3_version().split(".")[:2])
    for asked in (major_minor, _python3_version(), ">=3.8"):  # the image's own, and a range uv decides
        subprocess.run([str(wrapper), "-p", asked, "pytest"], capture_output=True, check=True)
    assert not _notes(tmp_path).exists()
    assert uvx_checks(None) == [] and uvx_checks(b"\n") == []


def test_the_uvx_notes_of_several_versions_are_one_check() -> None:
    notes = b"uvx asked for Python 3.13, got 3.11.2\nuvx asked for Python 3.12, got 3.11.2\n"
    (check,) = uvx_checks(notes + notes)
    assert check.reason == "uvx asked for Python 3.13, got 3.11.2; uvx asked for Python 3.12, got 3.11.2"
