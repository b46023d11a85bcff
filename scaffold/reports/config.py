"""Which report files to write: ``--html``, ``--report-config FILE`` and ``COMET_EVAL_REPORT_CONFIG``.

The configuration is the original Comet eval's JSON, ``{"report_outputs": {"markdown": true, "html": true}}``. The
variable holds either that JSON itself or the path of a file with it. Precedence: ``--report-config``
over the variable; ``--html`` turns HTML on whatever the configuration says. Defaults: Markdown on,
HTML off. ``results.jsonl`` is always written: it is the machine-readable record of the run.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scaffold.errors import ReportError

__all__ = ["ENV_VAR", "ReportOutputs", "parse_report_config", "resolve_outputs"]

ENV_VAR = "COMET_EVAL_REPORT_CONFIG"
_KEYS = ("markdown", "html")


@dataclass(frozen=True, slots=True)
class ReportOutputs:
    markdown: bool = True
    """summary.md and comparison_report.md."""
    html: bool = False
    """report.html."""


def parse_report_config(text: str, source: str) -> ReportOutputs:
    """Parse the JSON configuration; ReportError naming *source* and the field on any mistake."""
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{source}: not valid JSON ({exc.msg} at line {exc.lineno}); expected {_EXAMPLE}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("report_outputs"), Mapping):
        raise ReportError(f"{source}: needs an object with a 'report_outputs' object, e.g. {_EXAMPLE}")
    outputs = data["report_outputs"]
    unknown = sorted(set(outputs) - set(_KEYS))
    if unknown:
        raise ReportError(f"{source}: report_outputs.{unknown[0]} is not known; the keys are {', '.join(_KEYS)}")
    values = {}
    for key in _KEYS:
        value = outputs.get(key, getattr(ReportOutputs(), key))
        if not isinstance(value, bool):
            raise ReportError(f"{source}: report_outputs.{key} must be true or false (got {value!r})")
        values[key] = value
    return ReportOutputs(**values)


_EXAMPLE = '{"report_outputs": {"markdown": true, "html": true}}'


def resolve_outputs(
    *, html: bool = False, config_file: Path | None = None, environ: Mapping[str, str] | None = None
) -> ReportOutputs:
    """The outputs chosen by the flag, the file and the environment (see the module docstring)."""
    outputs = ReportOutputs()
    env_value = (environ or {}).get(ENV_VAR, "").strip()
    if config_file is not None:
        try:
            text = config_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReportError(f"--report-config {config_file}: cannot be read ({exc.strerror})") from None
        outputs = parse_report_config(text, str(config_file))
    elif env_value.startswith("{"):
        outputs = parse_report_config(env_value, f"${ENV_VAR}")
    elif env_value:
        path = Path(env_value)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise ReportError(
                f"${ENV_VAR}={env_value}: cannot be read ({exc.strerror}); set it to a JSON file or to {_EXAMPLE}"
            ) from None
        outputs = parse_report_config(text, f"${ENV_VAR} ({path})")
    if html:
        outputs = ReportOutputs(outputs.markdown, True)
    return outputs
