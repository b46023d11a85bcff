"""What a comet session decided at its end, as typed values: the seam between the pytest plugin and
whoever runs the session (``comet eval``) or reports it (the tracing suites).

The plugin hands them over through its own hooks (pytest_comet/hooks.py): ``pytest_comet_session_outcome``
once the controller has written the reports and answered the gates, ``pytest_comet_tracing_outcome`` once
a tracing suite has sent (or failed to send) the experiment. Nobody looks the plugin's objects up by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scaffold.reports.gates import GateResult

__all__ = ["SessionOutcome", "TracingOutcome"]


@dataclass(frozen=True, slots=True)
class SessionOutcome:
    """The controller's conclusions, each a line as the terminal shows it (``comet eval`` prints the same)."""

    identities: tuple[str, ...] = ()
    """``NAME: agent ..., model ...`` per treatment: what each treatment ran."""
    verdicts: tuple[str, ...] = ()
    """``TREATMENT vs BASELINE: LABEL`` per compared treatment."""
    report_paths: tuple[Path, ...] = ()
    report_error: str = ""
    """Why the reports were not written (empty: they were, or there was nothing to report)."""
    gate_results: tuple[GateResult, ...] = ()
    quality: tuple[str, ...] = ()
    """The eval.yaml quality gates' lines (empty: no manifest, or no quality gates)."""
    budget: tuple[str, ...] = ()
    """The lines about trials a budget (--max-trials, --max-cost) kept from starting."""


@dataclass(frozen=True, slots=True)
class TracingOutcome:
    """How a tracing suite's reporting went: its lines for the terminal, and whether an upload failed."""

    suite: str
    lines: tuple[str, ...]
    failed: bool
