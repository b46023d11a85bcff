"""The docker backend: Docker Engine through the docker SDK, one image per task, one container per trial
(and a compose task's services beside it).

backend.py      DockerBackend (the Backend contract): composes the parts below; bind or copy mode, validation
workspace.py    DockerWorkspace: one trial's /workspace and container (the Workspace contract)
task_images.py  each task's image made ready once per backend: built, reused or copied; a leaked skill fails it
launch.py       a trial's container: what it is created with, its creation and start, its keeper attached
compose.py      a compose task's services: the trial's network, volumes and sidecars, started and removed
compose_images.py  the images of a compose task's services, made as a Harbor task's image is
compose_main.py the container of a compose task's main service: its network, fields, limits, NO_PROXY
standby.py      the next trial's container, started while a trial runs
disposal.py     containers and volumes removed in the background; kept workspaces copied out; session end
network.py      the agent's network: host-only, egress proxy or bridge; leaving it for validation
egress.py       the egress proxy: only the model endpoint's host:port
relay.py        a remote engine's egress proxy: a relay container on that engine
exec.py         a command through exec: time limit, output to files, process-tree kill
keeper.py       the container's main process: fast command start, the reset that ends every process, the
                image's ENTRYPOINT started beside it (a Harbor task's)
manifest.py     the listing of a container's workspace in one exec
copy_mode.py    files in and out as tar archives, for engines that cannot see this machine's folders
sessions.py     labels, background removal, sweeps of what dead sessions left
agent_layer.py  agent CLIs installed once on the host, mounted (or copied into a volume)
images.py       task images: tagged by content hash, built with a time limit, copied between engines
harbor_image.py a Harbor-format task's image: its docker_image, else its Dockerfile built; the skill leak check
dockerfile.py   the rewrite of a Harbor Dockerfile: image aliases, COPY skills left out, the host's CA
host_trust.py   the host's CA bundle and proxy settings, for builds and containers
base_image.py   the offline base images (bookworm, trixie): debootstrap + import
engine.py       the engine connection, machine-wide state and locks
pool.py         a pool of engines behind one backend: the worker's engine, the next when it dies
"""

from scaffold.workspaces.docker.backend import DockerBackend
from scaffold.workspaces.docker.copy_mode import COPY_ENV
from scaffold.workspaces.docker.network import egress_mode
from scaffold.workspaces.docker.sessions import sweep
from scaffold.workspaces.docker.workspace import DockerWorkspace

__all__ = ["COPY_ENV", "DockerBackend", "DockerWorkspace", "egress_mode", "sweep"]
