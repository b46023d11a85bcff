"""Validation of a trial after its agent: artifact checks, then the task's scripts."""

from scaffold.validation.results import ValidationCheck, ValidationOutcome, parse_results

__all__ = ["ValidationCheck", "ValidationOutcome", "parse_results"]
