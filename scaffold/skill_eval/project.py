"""The folder a skill evaluation keeps its files in, ``<owner>/.comet/`` (runs, generated tasks, locks),
where ``<owner>`` is the skill package unless ``--project`` / ``--project-root`` names another folder.

Skills are kept in git; what an evaluation leaves there is not the skill. So the folder is made with a
``.gitignore`` holding ``*``: git then ignores the whole folder, that file included, without the user
editing the repository's own ``.gitignore``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from scaffold.util.atomic import write_text_atomic

__all__ = ["COMET_FOLDER", "GITIGNORE", "comet_folder"]

COMET_FOLDER: Final = ".comet"
GITIGNORE: Final = "*\n"
"""The ``.gitignore`` written into a new ``.comet/``: everything in it, itself too."""


def comet_folder(owner: Path) -> Path:
    """``<owner>/.comet``, made with its ``.gitignore`` when it does not exist yet. An existing folder is
    left as it is (its ``.gitignore`` too, when the user changed or removed it)."""
    folder = owner / COMET_FOLDER
    owner.mkdir(parents=True, exist_ok=True)
    try:
        folder.mkdir()
    except FileExistsError:
        return folder  # made before (by this or another process), or the user's: theirs to keep
    write_text_atomic(folder / ".gitignore", GITIGNORE)
    return folder
