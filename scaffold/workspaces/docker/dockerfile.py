"""A Harbor-format task's Dockerfile as we build it: written by others, rewritten only where it must be.

:func:`rewrite_dockerfile` is pure (text in, text out); :func:`skill_folders` and :func:`make_context`
read and copy the build context. Three rewrites, each leaving the rest byte for byte as written:

* **aliases**: a ``FROM`` image (also ``FROM --platform=... ref AS stage``, or a ``$ARG`` with a default)
  that ``--image-alias`` maps, else (with ``stand_ins``) that has a default stand-in
  (scaffold.workspaces.stand_ins: ``python:*``, ``debian:*``, ``ubuntu:*``), is replaced by that local
  image, for engines that cannot pull;
* **without skills** (every treatment but the task's own skills): each ``COPY``/``ADD`` of the context's
  ``skills`` folder (``skills``, ``./skills``, ``skills/x``) or of another folder holding a SKILL.md is
  commented out with a note; a line that copies other sources too keeps those. A source with wildcards
  (``COPY skill[s] /tmp/skills_src/``) is matched against the context as Go's ``filepath.Match`` does for
  the builder: one whose every match lies in those folders is a skill source too. The build context
  handed to the engine is a copy without those folders, so a ``COPY . /app`` cannot bring them either;
* **BuildKit's empty-wildcard rule**: Harbor builds with BuildKit, whose frontend copies nothing for a
  wildcard source that matches nothing (when the folder before its first wildcard exists), where the
  classic builder, the only one the Docker API offers us, stops with "no source files were specified"
  when no source of the line matches. A COPY/ADD whose every source is such a wildcard (the optional
  ``COPY skill[s]/ skills/`` idiom, or a skills glob once the skills are left out) is commented out with a
  note, so both builders make the same image;
* **the host's CA bundle** (:mod:`.host_trust`): copied into the context, and after every ``FROM`` two
  lines put it at ``HOST_CA_PATH`` and point pip, requests, curl, uv, openssl, git and node at it.

Only Harbor-format tasks are rewritten. Our own tasks build ``FROM ${BASE_IMAGE}`` offline and verify
without network, so they need neither aliases nor the CA; rewriting them would also change every one of
their image tags (and tie them to the host's bundle) for nothing.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from scaffold.workspaces.docker.host_trust import HOST_CA_PATH, ca_environment
from scaffold.workspaces.stand_ins import choose_image

__all__ = [
    "CA_CONTEXT_NAME",
    "SKILL_FILE",
    "Rewrite",
    "context_entries",
    "make_context",
    "rewrite_dockerfile",
    "skill_folders",
]

SKILL_FILE = "SKILL.md"
CA_CONTEXT_NAME = ".comet-eval-host-ca.pem"
"""The host's CA bundle in the build context (a name no task uses; excepted from its .dockerignore)."""
_NOTE = "# comet-eval, without the environment's skills:"
_EMPTY_NOTE = "# comet-eval, no source matches in the context (BuildKit copies nothing; the classic builder stops):"
_WILDCARD = frozenset("*?[\\")
"""What makes a COPY source a pattern for the builder (Go's filepath.Match, with its escape character)."""
_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")
_HEREDOC = re.compile(r"<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")


@dataclass(frozen=True, slots=True)
class Rewrite:
    """A rewritten Dockerfile and what was done to it."""

    text: str
    bases: tuple[str, ...]
    """The images its stages start from, after aliasing, in order, without duplicates: not ``scratch``, not
    an earlier stage, not a reference an unknown build argument leaves open."""
    aliased: tuple[tuple[str, str], ...] = ()
    """(the image as written, its local stand-in) for each FROM that was mapped."""
    neutralised: tuple[str, ...] = ()
    """The COPY/ADD instructions left out (or cut down) without skills, as written."""
    emptied: tuple[str, ...] = ()
    """The COPY/ADD instructions left out because no source of theirs matches anything (BuildKit's
    empty-wildcard rule), as written; only with the context's entries given."""


@dataclass(slots=True)
class _Block:
    lines: list[str]
    instruction: str  # the logical line: continuations joined, comment lines dropped; "" for comments


def rewrite_dockerfile(
    text: str,
    *,
    aliases: Mapping[str, str] | None = None,
    stand_ins: bool = False,
    without_skills: bool = False,
    skill_dirs: Sequence[str] = ("skills",),
    ca_file: str | None = None,
    build_args: Mapping[str, str] | None = None,
    context: Collection[str] | None = None,
) -> Rewrite:
    """*text* with the rewrites of the module docstring. *aliases*: normalised REF -> LOCAL, over the
    default stand-ins when *stand_ins*; *skill_dirs*: context-relative folders (or files)
    left out without skills; *ca_file*: the bundle's name in the context (None: no CA lines);
    *build_args*: values given to the build, for ``FROM $ARG`` (before the ARG lines' defaults);
    *context*: every entry of the build context as the engine gets it, skills included
    (:func:`context_entries`), to match wildcard sources against; None: wildcards are left as written."""
    aliases = aliases or {}
    escape = _escape_char(text)
    blocks = _blocks(text, escape)
    args: dict[str, str] = {}
    stages: set[str] = set()
    bases: list[str] = []
    aliased: list[tuple[str, str]] = []
    neutralised: list[str] = []
    emptied: list[str] = []
    out: list[str] = []
    seen_from = False
    drop = [_clean(d) for d in skill_dirs if _clean(d)] if without_skills else []
    sources = _Sources(drop, context)
    for block in blocks:
        words = block.instruction.split()
        keyword = words[0].upper() if words else ""
        if keyword == "ARG" and not seen_from:
            for word in words[1:]:
                name, _, value = word.partition("=")
                args.setdefault(name, _unquote(value))
        if keyword == "FROM":
            seen_from = True
            line, base, mapped = _from(words, {**args, **(build_args or {})}, stages, aliases, stand_ins)
            out.append(line if mapped else "".join(block.lines))
            if mapped is not None:
                aliased.append(mapped)
            if base is not None and base not in bases:
                bases.append(base)
            if ca_file is not None:
                out.append(f"COPY {ca_file} {HOST_CA_PATH}\n")
                env = " ".join(f"{k}={v}" for k, v in ca_environment().items())
                out.append(f"ENV {env}\n")
            continue
        if keyword in ("COPY", "ADD") and sources.active:
            cut = _cut_sources(block.instruction, sources)
            if cut is not None:
                kept, skills = cut
                (neutralised if skills else emptied).append(block.instruction)
                out.append((_NOTE if skills else _EMPTY_NOTE) + "\n")
                out.extend(f"# {line.rstrip(chr(10))}\n" for line in block.lines)
                if kept:
                    out.append(kept + "\n")
                continue
        out.append("".join(block.lines))
    # A last line without its newline, followed by lines of ours, gets one.
    last = len(out) - 1
    result = "".join(c if c.endswith("\n") or i == last else c + "\n" for i, c in enumerate(out))
    return Rewrite(result, tuple(bases), tuple(aliased), tuple(neutralised), tuple(emptied))


def _escape_char(text: str) -> str:
    """The ``# escape=`` parser directive (only among the leading comment lines), else a backslash."""
    for line in text.splitlines():
        match = re.match(r"^#\s*(\w+)\s*=\s*(\S+)\s*$", line)
        if match is None:
            break
        if match.group(1).lower() == "escape" and match.group(2) in ("`", "\\"):
            return match.group(2)
    return "\\"


def _blocks(text: str, escape: str) -> list[_Block]:
    """The physical lines grouped into instructions (with their continuation lines, and the body of a
    heredoc) and standalone comment or blank lines."""
    lines = text.splitlines(keepends=True)
    blocks: list[_Block] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            blocks.append(_Block([line], ""))
            i += 1
            continue
        group = [line]
        logical = [stripped]
        i += 1
        while logical[-1].endswith(escape) and i < len(lines):
            logical[-1] = logical[-1][: -len(escape)]
            nxt = lines[i]
            group.append(nxt)
            i += 1
            inner = nxt.strip()
            if inner.startswith("#"):
                logical.append(escape)  # a comment inside a continuation: skipped, the continuation goes on
                continue
            logical.append(inner)
        if logical[-1].endswith(escape):
            logical[-1] = logical[-1][: -len(escape)]
        instruction = " ".join(part for part in logical if part != escape)
        for word in _HEREDOC.findall(instruction):  # RUN <<EOF ... EOF: the body is not instructions
            while i < len(lines):
                group.append(lines[i])
                i += 1
                if group[-1].strip() == word:
                    break
        blocks.append(_Block(group, instruction))
    return blocks


def _from(
    words: list[str], args: Mapping[str, str], stages: set[str], aliases: Mapping[str, str], stand_ins: bool
) -> tuple[str, str | None, tuple[str, str] | None]:
    """A FROM instruction: (its line if mapped, the image it starts from or None, (written, local) if mapped)."""
    flags = [w for w in words[1:] if w.startswith("--")]
    rest = [w for w in words[1:] if not w.startswith("--")]
    if not rest:
        return "", None, None
    written = rest[0]
    stage = rest[2] if len(rest) >= 3 and rest[1].upper() == "AS" else None
    ref = _expand(written, args)
    base: str | None = ref
    mapped = None
    if ref is None or ref.lower() == "scratch" or ref.lower() in stages:
        base = None
    else:
        choice = choose_image(ref, aliases, stand_ins=stand_ins)
        if choice is not None:
            base, mapped = choice.local, (ref, choice.local)
    if stage is not None:
        stages.add(stage.lower())
    if mapped is None:
        return "", base, None
    line = " ".join(["FROM", *flags, mapped[1], *(["AS", stage] if stage else [])])
    return f"# comet-eval: {written} aliased to {mapped[1]}\n{line}\n", base, mapped


def _expand(value: str, args: Mapping[str, str]) -> str | None:
    """*value* with ``$NAME``, ``${NAME}`` and ``${NAME:-default}`` replaced; None when one has no value."""
    missing = False

    def one(match: re.Match[str]) -> str:
        nonlocal missing
        name = match.group(1) or match.group(3)
        if args.get(name):
            return args[name]
        if match.group(2) is not None:
            return match.group(2)
        missing = True
        return ""

    out = _VAR.sub(one, value)
    return None if missing or not out else out


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _clean(path: str) -> str:
    """A context-relative path in one spelling: ``./skills/`` is ``skills``."""
    parts = [p for p in PurePosixPath(path.replace("\\", "/")).parts if p not in (".", "/")]
    return "/".join(parts)


def _clean_pattern(source: str) -> str:
    """A COPY source as a context-relative pattern: as :func:`_clean`, but a backslash stays the escape
    character it is for the builder."""
    return "/".join(p for p in PurePosixPath(source).parts if p not in (".", "/"))


def _is_skill_source(source: str, drop: Sequence[str]) -> bool:
    clean = _clean(source)
    return any(clean == d or clean.startswith(d + "/") for d in drop)


def _go_pattern(pattern: str) -> re.Pattern[str] | None:
    """Go's ``filepath.Match`` *pattern* (what the builders match COPY sources with) as a regular expression
    over a whole context-relative path: ``*`` and ``?`` stop at ``/``, ``[^...]`` negates, ``\\`` escapes.
    None for a pattern Go refuses (ErrBadPattern), which is then left as written."""
    out: list[str] = []
    i, n = 0, len(pattern)

    def char(at: int) -> tuple[str, int] | None:  # one character of a class: escaped, never a bare - or ]
        if at >= n or pattern[at] in "-]":
            return None
        if pattern[at] == "\\":
            at += 1
            if at >= n:
                return None
        return pattern[at], at + 1

    while i < n:
        c = pattern[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\":
            if i + 1 >= n:
                return None
            i += 1
            out.append(re.escape(pattern[i]))
        elif c == "[":
            i += 1
            negated = i < n and pattern[i] == "^"
            i += negated
            ranges: list[str] = []
            while i >= n or pattern[i] != "]" or not ranges:
                lo = char(i)
                if lo is None:
                    return None
                low, i = lo
                high = low
                if i < n and pattern[i] == "-":
                    hi = char(i + 1)
                    if hi is None:
                        return None
                    high, i = hi
                ranges.append(re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}")
            out.append(("[^" if negated else "[") + "".join(ranges) + "]")
        else:
            out.append(re.escape(c))
        i += 1
    try:
        return re.compile("".join(out) + r"\Z", re.DOTALL)
    except re.error:  # a range whose ends are in the wrong order
        return None


class _Sources:
    """What a COPY/ADD source reaches in the build context: the skill folders left out (*drop*) and, when
    the context's entries are known, what a wildcard matches there before and after they are left out."""

    def __init__(self, drop: Sequence[str], entries: Collection[str] | None) -> None:
        self.drop = drop
        self.entries = entries
        self.kept = None if entries is None else frozenset(e for e in entries if not _is_skill_source(e, drop))
        self.active = bool(drop) or entries is not None

    def skill(self, source: str) -> bool:
        """A source that copies only what is left out without skills: inside a skill folder as written, or
        a wildcard whose every match in the context is."""
        if not self.drop:
            return False
        if _is_skill_source(source, self.drop):
            return True
        matches = self._matches(source, self.entries)
        return bool(matches) and all(_is_skill_source(m, self.drop) for m in matches or ())

    def empty(self, source: str) -> bool:
        """A wildcard that matches nothing in the context the engine gets, under a folder that is there:
        BuildKit copies nothing for it (where it would fail for a folder that is missing)."""
        if self.kept is None or self._matches(source, self.kept) != []:
            return False
        parts = _clean_pattern(source).split("/")
        fixed = "/".join(parts[: next(i for i, p in enumerate(parts) if _WILDCARD & set(p))])
        return not fixed or fixed in self.kept

    def _matches(self, source: str, entries: Collection[str] | None) -> list[str] | None:
        """What the wildcard *source* matches among *entries*; None when it is no wildcard (or one left as
        written: a variable, a URL, a pattern Go refuses) or the entries are unknown."""
        clean = _clean_pattern(source)
        if entries is None or not _WILDCARD & set(clean) or "$" in clean or "://" in source:
            return None
        pattern = _go_pattern(clean)
        if pattern is None:
            return None
        return [e for e in entries if pattern.match(e)]


def _json_form(body: str) -> list[str] | None:
    """The arguments of an instruction in JSON form (``["a b", "/d/"]``), as Docker reads it: a JSON array of
    strings; None when *body* is not one (the shell form)."""
    if not body.startswith("["):
        return None
    try:
        parsed = json.loads(body)
    except json.JSONDecodeError:
        return None
    return list(parsed) if isinstance(parsed, list) and all(isinstance(p, str) for p in parsed) else None


def _cut_sources(instruction: str, sources: _Sources) -> tuple[str, bool] | None:
    """A COPY/ADD without its skill sources, and without every source when none of them would match
    anything: None when unchanged, else (the cut-down instruction, "" when nothing is left; whether skill
    sources went). ``--from`` copies from a stage or an image, not the context: left alone."""
    keyword, _, rest = instruction.strip().partition(" ")
    words = rest.split()
    flags: list[str] = []
    while words and words[0].startswith("--"):
        flags.append(words.pop(0))
        if flags[-1] == "--":  # the end of the flags, as Docker reads them: what follows are sources
            break
    if any(f.startswith("--from") for f in flags):
        return None
    items = _json_form(" ".join(words))
    as_json = items is not None
    if items is None:  # the shell form: also a first source that starts with "[" but is no JSON (skill[s])
        items = words
    if len(items) < 2:
        return None
    written, dest = items[:-1], items[-1]
    kept = [s for s in written if not sources.skill(s)]
    skills = len(kept) < len(written)
    if kept and all(sources.empty(s) for s in kept):
        kept = []
    if len(kept) == len(written):
        return None
    if not kept:
        return "", skills
    args = json.dumps([*kept, dest]) if as_json else " ".join([*kept, dest])
    return " ".join([keyword, *flags, args]), skills


def skill_folders(context: Path) -> list[str]:
    """What a build without skills leaves out of *context*, relative to it: ``skills`` and every folder
    holding a SKILL.md (a SKILL.md at the top: that file alone), outermost only, sorted."""
    found: set[str] = {"skills"} if (context / "skills").exists() else set()
    for dirpath, dirnames, filenames in os.walk(context):
        base = Path(dirpath)
        rel = base.relative_to(context).as_posix()
        if rel != "." and any(rel == d or rel.startswith(d + "/") for d in found):
            dirnames[:] = []
            continue
        if SKILL_FILE in filenames:
            found.add(SKILL_FILE if rel == "." else rel)
            if rel != ".":
                dirnames[:] = []
    outer = sorted(found)
    return [d for d in outer if not any(d != o and d.startswith(o + "/") for o in outer)]


def context_entries(context: Path) -> frozenset[str]:
    """Every file and folder of *context* the engine gets (its .dockerignore applied, as the Docker SDK does
    when it makes the context's archive), relative to it, ``/``-separated: what COPY sources match."""
    from docker.utils.build import exclude_paths

    ignore = context / ".dockerignore"
    patterns: list[str] = []
    if ignore.is_file():
        lines = ignore.read_text(encoding="utf-8", errors="replace").splitlines()
        patterns = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    return frozenset(p.replace(os.sep, "/") for p in exclude_paths(str(context), patterns))


def make_context(source: Path, dest: Path, *, drop: Sequence[str] = (), ca_bundle: Path | None = None) -> None:
    """Copy the build context *source* to *dest* (which must not exist) without the *drop* paths
    (context-relative), adding *ca_bundle* as :data:`CA_CONTEXT_NAME` (excepted from a .dockerignore)."""
    dropped = {_clean(d) for d in drop}

    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(source).as_posix()
        prefix = "" if rel == "." else rel + "/"
        return {n for n in names if prefix + n in dropped}

    shutil.copytree(source, dest, symlinks=True, ignore=ignore)
    if ca_bundle is not None:
        shutil.copyfile(ca_bundle, dest / CA_CONTEXT_NAME)
        ignore_file = dest / ".dockerignore"
        if ignore_file.is_file():
            text = ignore_file.read_text(encoding="utf-8", errors="replace")
            ignore_file.write_text(f"{text.rstrip(chr(10))}\n!{CA_CONTEXT_NAME}\n", encoding="utf-8")
