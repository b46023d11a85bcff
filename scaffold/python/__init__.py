"""Helpers that run *inside* a workspace (validation scripts); standard library only."""
