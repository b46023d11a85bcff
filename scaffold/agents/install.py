"""How an agent CLI gets into a workspace: a package and a pinned version, or nothing to install."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["InstallSpec"]


@dataclass(frozen=True, slots=True)
class InstallSpec:
    """``kind`` npm or pip installs ``package==version`` (offline-safe: from the package registries only,
    at image build time or into a host cache that is mounted); ``none`` means the executable is already
    in the image or on PATH. ``executable`` is the command the adapter runs."""

    kind: Literal["npm", "pip", "none"]
    executable: str
    package: str | None = None
    version: str | None = None

    @property
    def key(self) -> str:
        """A stable identity for caches and image tags: ``npm:@anthropic-ai/claude-code@2.1.112``."""
        if self.kind == "none":
            return f"none:{self.executable}"
        return f"{self.kind}:{self.package}@{self.version or 'latest'}"
