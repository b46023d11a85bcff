"""Validation for the comet-api-cache-ttl task: comet workflow followed + set() accepts ttl."""

import subprocess
import sys

from comet_checks import WORKSPACE, _failed, _passed, run_comet_checks, write_results


def check_ttl_implementation() -> dict:
    probe = subprocess.run(
        [sys.executable, "-c", "import inspect, cache; print(list(inspect.signature(cache.Cache.set).parameters))"],
        capture_output=True,
        text=True,
        check=False,
        cwd=str(WORKSPACE),
    )
    if probe.returncode != 0:
        return _failed("ttl_implementation", f"cannot inspect cache.Cache.set: {probe.stderr[-200:]}")
    if "ttl" not in probe.stdout:
        return _failed("ttl_implementation", "Cache.set() has no 'ttl' parameter")
    return _passed("ttl_implementation", "Cache.set() takes ttl")


if __name__ == "__main__":
    write_results([*run_comet_checks(), check_ttl_implementation()])
