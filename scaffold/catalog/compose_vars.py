"""Variables in a compose file, as Docker Compose interpolates them: ``$VAR``, ``${VAR}``, ``${VAR:-default}``,
``${VAR-default}``, ``${VAR:?error}``, ``${VAR?error}``, ``${VAR:+other}``, ``${VAR+other}`` and ``$$`` for a
literal ``$``. A default (or other, or error) may itself hold variables (``${A:-${B}}``). A ``$`` followed by
anything else is an error, as in Compose (write ``$$``).

An unset variable becomes the empty string, as in Compose, and is reported (the loader warns about it).
Pure: strings in, strings out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["Interpolated", "InterpolationError", "escape", "interpolate"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_NESTING = 20


class InterpolationError(ValueError):
    """A value that is not a valid template, or a ``${VAR?error}`` whose variable is unset."""


@dataclass(slots=True)
class Interpolated:
    """The text with every variable replaced, and the names that were unset (without a default)."""

    text: str
    unset: list[str] = field(default_factory=list)


def escape(text: str) -> str:
    """*text* as a template that interpolates to itself."""
    return text.replace("$", "$$")


def interpolate(text: str, variables: Mapping[str, str]) -> Interpolated:
    """*text* with its variables replaced from *variables* (see the module docstring)."""
    out = Interpolated("")
    value, end = _Parser(text, variables, out.unset).template(0, stop=None)
    assert end == len(text)
    out.text = value
    return out


class _Parser:
    def __init__(self, text: str, variables: Mapping[str, str], unset: list[str]) -> None:
        self.text = text
        self.variables = variables
        self.unset = unset
        self.depth = 0

    def template(self, pos: int, *, stop: str | None) -> tuple[str, int]:
        """The text from *pos* up to *stop* (``}`` inside a braced default) or the end: (value, end)."""
        text, parts = self.text, list[str]()
        while pos < len(text):
            char = text[pos]
            if stop is not None and char == stop:
                return "".join(parts), pos
            if char != "$":
                ends = [i for i in (text.find("$", pos), text.find(stop, pos) if stop else -1) if i >= 0]
                end = min(ends, default=len(text))
                parts.append(text[pos:end])
                pos = end
                continue
            value, pos = self.dollar(pos)
            parts.append(value)
        if stop is not None:
            raise InterpolationError(f"{text!r}: a '${{' is never closed with '}}'")
        return "".join(parts), pos

    def dollar(self, pos: int) -> tuple[str, int]:
        """A ``$...`` at *pos*: its value and where it ends."""
        text = self.text
        after = text[pos + 1 : pos + 2]
        if after == "$":
            return "$", pos + 2
        if after == "{":
            return self.braced(pos + 2)
        match = _NAME.match(text, pos + 1)
        if match is None:
            raise InterpolationError(
                f"{text!r}: a '$' must start a variable ($NAME or ${{NAME}}); write '$$' for a '$' itself"
            )
        return self.lookup(match.group(0)), match.end()

    def braced(self, pos: int) -> tuple[str, int]:
        """``${NAME[op word]}`` from just after ``${``: its value and the position after ``}``."""
        text = self.text
        match = _NAME.match(text, pos)
        if match is None:
            raise InterpolationError(f"{text!r}: '${{' must be followed by a variable name")
        name, pos = match.group(0), match.end()
        if text[pos : pos + 1] == "}":
            return self.lookup(name), pos + 1
        for op in (":-", ":?", ":+", "-", "?", "+"):
            if text.startswith(op, pos):
                break
        else:
            raise InterpolationError(
                f"{text!r}: after ${{{name} comes '}}' or one of :- - :? ? :+ + (got {text[pos : pos + 1]!r})"
            )
        if self.depth >= _MAX_NESTING:
            raise InterpolationError(f"{text!r}: variables nested more than {_MAX_NESTING} deep")
        # The word's own unset variables count only when the word is used.
        outer, self.unset = self.unset, []
        self.depth += 1
        word, end = self.template(pos + len(op), stop="}")
        self.depth -= 1
        inner, self.unset = self.unset, outer
        value = self.variables.get(name)
        present = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith("?") and not present:
            raise InterpolationError(f"${{{name}}} is required: {word or 'the variable is not set'}")
        if (op.endswith("-") and not present) or (op.endswith("+") and present):
            self.unset.extend(n for n in inner if n not in self.unset)
            return word, end + 1
        return ("" if op.endswith("+") else value or ""), end + 1

    def lookup(self, name: str) -> str:
        value = self.variables.get(name)
        if value is None:
            if name not in self.unset:
                self.unset.append(name)
            return ""
        return value
