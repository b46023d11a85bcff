"""Plumbing every layer uses: atomic writes, processes, hashing, HTTP serving, plain data, input
schemas. It imports nothing of the harness but ``scaffold.errors``."""
