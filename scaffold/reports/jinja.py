"""The jinja2 bytecode cache of the report templates: compiled once per machine, not once per process.

Compiling the templates costs more than rendering them: 73-75 ms for the two Markdown reports and 27 ms
for the transcript's (measured 2026-12-07, from the cache 1-2 ms), paid by every pytest process that
writes them and every ``comet report``: 1.5% of ``comet report`` at 100,000 records (4.9 s,
benchmarks/reports.py). jinja2 keys each cached template by its name and a checksum of its source, and its
header by the jinja2 and Python versions, so an edited template or an upgrade is compiled again; rendering
from the cache gives the same bytes. Each environment has its own files (their options differ). The cache
lives in jinja2's own per-user folder of the temporary directory, checked to be ours.
"""

from __future__ import annotations

import contextlib

from jinja2 import BytecodeCache, FileSystemBytecodeCache
from jinja2.bccache import Bucket

__all__ = ["bytecode_cache"]


class _Cache(FileSystemBytecodeCache):
    """jinja2's file cache, its folder found (and made) on first use, not when a module is imported: a
    process that renders nothing (``comet eval --collect``) touches no file."""

    def __init__(self, pattern: str) -> None:  # not FileSystemBytecodeCache's: that one makes the folder
        self.pattern = pattern
        self._folder: str | None = None

    @property
    def directory(self) -> str:
        if self._folder is None:
            self._folder = self._get_default_cache_dir()
        return self._folder

    @directory.setter
    def directory(self, folder: str) -> None:
        self._folder = folder

    def load_bytecode(self, bucket: Bucket) -> None:
        # No safe folder (jinja2 refuses one it does not own): the template is compiled as without a cache.
        with contextlib.suppress(OSError, RuntimeError):
            super().load_bytecode(bucket)

    def dump_bytecode(self, bucket: Bucket) -> None:
        # A full or read-only temporary folder: the template is compiled again next time.
        with contextlib.suppress(OSError, RuntimeError):
            super().dump_bytecode(bucket)


def bytecode_cache(environment: str) -> BytecodeCache:
    """The cache of the environment named *environment* (its files are created on first render)."""
    return _Cache(pattern=f"__comet_{environment}_%s.cache")
