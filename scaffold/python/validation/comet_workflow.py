"""The original Comet eval's package path of the comet-workflow checks: the same module as ``comet_checks``.

Its validators and tests import ``scaffold.python.validation.comet_workflow``; this name is that module
itself (not a copy), so setting ``WORKSPACE`` through either name changes what both check.
"""

from __future__ import annotations

import sys

from scaffold.python.validation import comet_checks

sys.modules[__name__] = comet_checks
