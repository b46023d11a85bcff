"""Lenient reading of the task generator's answer, and the shape checks of its task list."""

from __future__ import annotations

import json

import pytest

from scaffold.skill_eval.answer import AnswerError, check_tasks, find_tasks

TASKS = [
    {"name": "a", "prompt": "Write a.md", "expect": {"files": ["a.md"]}},
    {"name": "b", "prompt": "Write b.md", "expect": {"contains": {"b.md": ["x"]}}, "rubric": ["clear"]},
]
DOC = json.dumps({"tasks": TASKS})


@pytest.mark.parametrize(
    "text",
    [
        DOC,
        f"```json\n{DOC}\n```",
        f"Here are the tasks:\n\n```\n{json.dumps({'tasks': TASKS}, indent=2)}\n```\nGood luck.",
        f"I thought about it. {DOC} That is all.",
        f"line one\nline two\n{DOC}",
        json.dumps({"result": {"output": {"tasks": TASKS}}}),
        json.dumps({"type": "result", "result": DOC}),  # JSON inside a string
        json.dumps([{"note": "x"}, {"tasks": TASKS}]),
        "Broken {first attempt\n" + DOC,
    ],
    ids=[
        "plain",
        "fenced",
        "fenced-surrounded",
        "surrounded",
        "last-line",
        "nested",
        "json-in-string",
        "list",
        "junk-first",
    ],
)
def test_tasks_found_leniently(text: str) -> None:
    assert find_tasks(text) == TASKS


def test_parsed_json_is_accepted_as_is() -> None:
    assert find_tasks({"tasks": TASKS}) == TASKS


def test_no_json_at_all() -> None:
    with pytest.raises(AnswerError, match="did not return JSON"):
        find_tasks("I could not come up with tasks, sorry.")


def test_json_without_a_task_list() -> None:
    with pytest.raises(AnswerError, match='no object with a "tasks" list'):
        find_tasks('{"answer": 42, "items": [1, 2]}')


def test_valid_shape_has_no_problems() -> None:
    assert check_tasks(TASKS) == []


def test_every_shape_problem_at_once() -> None:
    problems = check_tasks(
        [
            {"name": "bad name!", "prompt": "", "expect": {}, "extra": 1},
            "not a mapping",
            {"name": "ok", "prompt": "p", "expect": {"files": ["x"]}, "rubric": "one string", "workspace": 3},
            {"name": "ok", "prompt": "p", "expect": {"files": ["x"]}},
            {"name": "e", "prompt": "p", "expect": {"files": ["x"]}},
        ]
    )
    text = "\n".join(problems)
    assert "expected 2-4 tasks, got 5" in text
    assert "tasks[0]: unsupported fields ['extra']" in text
    assert "tasks[0].name: must match" in text
    assert "tasks[0].prompt" in text and "tasks[0].expect" in text
    assert "tasks[1]: must be an object" in text
    assert "tasks[2].rubric" in text and "tasks[2].workspace" in text
    assert "tasks[3].name: duplicates tasks[2].name: 'ok'" in text


def test_too_few_tasks() -> None:
    assert check_tasks(TASKS[:1]) == ["generated tasks: expected 2-4 tasks, got 1"]
