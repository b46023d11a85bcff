"""Validation of a trial after its agent: artifact checks, then the task's scripts."""

from scaffold.validation.results import Check, ValidationOutcome, parse_results

__all__ = ["Check", "ValidationOutcome", "parse_results"]
