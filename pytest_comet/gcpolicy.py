"""How a comet session uses Python's garbage collector, in every process of it (xdist workers too).

Each full pass of the collector walks every object that the process holds, and a comet process holds
about 60,000 once its trials are collected (the modules, pydantic's schemas, the catalogs, the items),
all of them for as long as it lives. Passes are triggered by allocation counts, so loading the harness
runs several, and pytest runs five more at its end (unraisableexception's clean-up). Every xdist worker
pays that again. Measured with 16 oracle trials on 2 cores: a worker's start cost 0.52 CPU s, and 0.47 s
with the freeze below.

- ``paused()``: no automatic pass while the harness loads. What an import creates stays alive anyway.
- ``freeze()``: once the trials are collected, what exists then is left out of later passes. What the
  trials create is collected as usual. ``--collect-only`` freezes too: its process ends with pytest's
  five passes, which over 10,000 items took 0.24 s (benchmarks/collection.py).
- ``thaw()``: at the session's end, gives the frozen objects back. This matters where pytest runs nested
  in a longer process (pytester's in-process runs), whose garbage would otherwise stay.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["freeze", "paused", "thaw"]

_frozen = False


@contextlib.contextmanager
def paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def freeze() -> None:
    global _frozen  # noqa: PLW0603 - one flag per process, as gc's own state is
    gc.freeze()
    _frozen = True


def thaw() -> None:
    global _frozen  # noqa: PLW0603
    if _frozen:
        gc.unfreeze()
        _frozen = False
