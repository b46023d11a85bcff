"""Validation helpers for task scripts; standard library only, so they can be copied into images."""
