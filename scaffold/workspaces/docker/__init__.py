"""The docker backend: Docker Engine through the docker SDK, one image per task, one container per trial.

backend.py      DockerBackend: images, containers, validation, cleanup (the Backend contract)
workspace.py    DockerWorkspace: one trial's /workspace and container (the Workspace contract)
network.py      the agent's network: host-only, egress proxy or bridge; leaving it for validation
egress.py       the egress proxy: only the model endpoint's host:port
exec.py         a command through exec: time limit, output to files, process-tree kill
keeper.py       the container's main process: fast command start, the reset that ends every process
copy_mode.py    files in and out as tar archives, for engines that cannot see this machine's folders
sessions.py     labels, background removal, sweeps of what dead sessions left
agent_layer.py  agent CLIs installed once on the host, mounted (or copied into a volume)
images.py       task images: tagged by content hash, built with a time limit
harbor_image.py a Harbor-format task's image: its docker_image, else its Dockerfile built; the skill leak check
dockerfile.py   the rewrite of a Harbor Dockerfile: image aliases, COPY skills left out, the host's CA
host_trust.py   the host's CA bundle and proxy settings, for builds and containers
base_image.py   the offline base images (bookworm, trixie): debootstrap + import
engine.py       the engine connection, machine-wide state and locks
"""

from scaffold.workspaces.docker.backend import DockerBackend
from scaffold.workspaces.docker.copy_mode import COPY_ENV
from scaffold.workspaces.docker.network import egress_mode
from scaffold.workspaces.docker.sessions import sweep
from scaffold.workspaces.docker.workspace import DockerWorkspace

__all__ = ["COPY_ENV", "DockerBackend", "DockerWorkspace", "egress_mode", "sweep"]
