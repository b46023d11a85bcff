"""Workspace backends: where a trial's files live and its commands run.

base.py       the contracts: Workspace, Backend, ValidationPolicy, InstallSpec, AgentNetwork (pure)
layout.py     the harness's names inside a workspace, the validation helpers' files (pure)
backends.py   create_backend(name, ...): the backend of a session
image_aliases.py  --image-alias REF=LOCAL, $COMET_IMAGE_ALIASES, the [image-aliases] file (pure)
stand_ins.py  the default stand-in of each python/debian/ubuntu image, and the Python mismatch (pure)
local.py      the embedded default: a temporary folder and subprocesses (files.py, processes.py, netns.py)
docker/       Docker Engine: one image per task, one container per trial
testing.py    a Workspace for tests: real files in a folder, scripted commands
"""
