"""These folders are task data, not the project's tests: the Harbor tasks' ``tests/test_outputs.py`` and the
original Comet eval's validators run inside a task's workspace or container (they expect ``/app/...`` or
import ``comet_checks`` from the validation helpers), so the project's pytest run must not collect them."""

collect_ignore_glob = ["*"]
