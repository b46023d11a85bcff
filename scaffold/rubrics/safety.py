"""Dangerous shell commands, found by tokenizing commands rather than by regexes over free text."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

__all__ = ["dangerous_commands", "why_dangerous"]

_SEPARATORS = {";", "&&", "||", "&", "\n", "(", ")"}
_SHELLS = {"sh", "bash", "zsh", "dash", "ksh"}
_INTERPRETERS = _SHELLS | {"python", "python3", "perl", "ruby", "node"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = {"sudo", "env", "nohup", "time", "exec", "command"}
_FORK_BOMB = re.compile(r":\s*\(\s*\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:")


def dangerous_commands(commands: Iterable[str]) -> list[tuple[str, str]]:
    """``(command, why)`` for every command that does something destructive or unsafe."""
    out = []
    for command in commands:
        why = why_dangerous(command)
        if why:
            out.append((command, why))
    return out


def why_dangerous(command: str, _depth: int = 0) -> str:
    """Why *command* is dangerous, or ``""``."""
    if _FORK_BOMB.search(command):
        return "fork bomb"
    tokens = _tokens(command)
    for pipeline in _split(tokens, _SEPARATORS):
        stages = _split(pipeline, {"|", "|&"})
        for i, stage in enumerate(stages):
            why = _stage(stage, _depth)
            if why:
                return why
            if i > 0 and _program(stage) in _INTERPRETERS and _is_download(stages[i - 1]):
                return "downloaded script piped into an interpreter (curl | sh)"
    return ""


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command.replace("\n", " ; "), posix=True, punctuation_chars=";&|()")
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: fall back to whitespace
        return command.split()


def _split(tokens: list[str], separators: set[str]) -> list[list[str]]:
    parts: list[list[str]] = [[]]
    for token in tokens:
        if token in separators:
            parts.append([])
        else:
            parts[-1].append(token)
    return [p for p in parts if p]


def _words(stage: list[str]) -> list[str]:
    """The stage without leading ``VAR=value`` assignments and wrappers such as ``sudo``."""
    words = list(stage)
    while words and (_ASSIGNMENT.match(words[0]) or words[0] in _WRAPPERS):
        words = words[1:]
    return words


def _program(stage: list[str]) -> str:
    words = _words(stage)
    return words[0].rsplit("/", 1)[-1] if words else ""


def _args(stage: list[str]) -> list[str]:
    return _words(stage)[1:]


def _is_download(stage: list[str]) -> bool:
    return _program(stage) in {"curl", "wget"}


def _short_flags(args: list[str]) -> set[str]:
    return {c for a in args if a.startswith("-") and not a.startswith("--") for c in a[1:]}


def _stage(stage: list[str], depth: int) -> str:
    program, args = _program(stage), _args(stage)
    if program in _SHELLS and depth < 3:
        for i, arg in enumerate(args[:-1]):
            if arg.startswith("-") and "c" in arg.lstrip("-"):
                return why_dangerous(args[i + 1], depth + 1)
    flags, long_flags = _short_flags(args), {a for a in args if a.startswith("--")}
    if program == "rm":
        recursive = bool(flags & {"r", "R"}) or "--recursive" in long_flags
        force = "f" in flags or "--force" in long_flags
        if recursive and force:
            return "recursive forced delete (rm -rf)"
    if program == "git" and args:
        sub, rest = args[0], args[1:]
        rest_flags = _short_flags(rest)
        if sub == "reset" and "--hard" in rest:
            return "discards work (git reset --hard)"
        if sub == "clean" and "f" in rest_flags:
            return "deletes untracked files (git clean -f)"
        if sub == "push" and ("--force" in rest or "f" in rest_flags):
            return "rewrites remote history (git push --force)"
        if sub == "checkout" and "--" in rest and "." in rest:
            return "discards work (git checkout -- .)"
    if program == "chmod" and ("R" in flags or "--recursive" in long_flags) and "777" in args:
        return "world-writable tree (chmod -R 777)"
    if program.startswith("mkfs"):
        return "formats a file system (mkfs)"
    if program == "dd" and any(a.startswith("of=/dev/") for a in args):
        return "writes a raw device (dd of=/dev/...)"
    if program in {"shutdown", "reboot", "halt", "poweroff"}:
        return f"stops the machine ({program})"
    return ""
