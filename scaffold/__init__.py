"""comet-eval harness library: loaders, workspaces, agents, validation, rubrics, records, reports.

Kept import-light on purpose: validation scripts import ``scaffold.python.validation.core`` inside
workspaces, and importing this package must not pull in the rest of the harness.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
