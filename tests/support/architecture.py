"""The project's import graph, and the parts of docs/architecture.md made from it.

tests/test_architecture.py holds the code to its rules with these functions; running this module
rewrites the generated parts of the document (the floors, and the module tables' imports), keeping what
people wrote (the prose, and each module's job):

    .venv/bin/python -m tests.support.architecture

Imports count wherever they are: at the top, inside functions, under ``TYPE_CHECKING``. Importing
``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` too, so those count as well.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

__all__ = [
    "DATA_FOLDERS",
    "IO_MODULES",
    "PACKAGES",
    "REPO",
    "Graph",
    "condensed",
    "cycles",
    "floors",
    "graph",
    "imported",
    "is_io",
    "load_modules",
    "render",
    "room",
    "room_edges",
]

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("scaffold", "pytest_comet", "comet_engine")
DATA_FOLDERS = ("scaffold/builtin",)
"""Package data that holds Python files, none of them a module of ours: the built-in suite's tasks (files
for workspaces) and its pytest entries (collected by pytest). scaffold.catalog.builtin locates them."""
DOC = REPO / "docs" / "architecture.md"

# The declared I/O modules (fnmatch patterns of module names): what runs processes, opens sockets, talks
# to Docker or is pytest's side. Every other module is pure.
IO_MODULES = (
    "pytest_comet",
    "pytest_comet.*",  # the plugin: pytest itself
    "scaffold.util.run_process",  # runs processes
    "scaffold.judge.transport",  # the LLM judge: HTTP to the model API, or its agent CLI's process
    "scaffold.session",  # makes the session's backend
    "scaffold.cli",
    "scaffold.cli.*",  # every command, the model server's included; comet eval runs pytest in-process
    "scaffold.agents.install",  # asks agent CLIs their version, runs npm and pip
    "scaffold.workspaces.backends",
    "scaffold.workspaces.local",
    "scaffold.workspaces.netns",
    "scaffold.workspaces.confine",
    "scaffold.workspaces.node_launch",  # fills an npm CLI's compile cache by running it
    "scaffold.workspaces.supervisor",  # starts the local backend's supervisor process
    "scaffold.workspaces.uv_tool",  # fetches uv for Harbor verifiers with pip
    "scaffold.workspaces.docker",
    "scaffold.workspaces.docker.*",
    "scaffold.util.httpserve",  # the local HTTP servers' sockets
    "scaffold.modelserver",
    "scaffold.modelserver.server",
    "scaffold.modelserver.__main__",
    "scaffold.traceserver",  # the trace server: an HTTP server (the package re-exports it)
    "scaffold.traceserver.server",
    "scaffold.traceserver.__main__",
    "scaffold.tracing.langfuse_report",  # the Langfuse SDK's client: HTTP to the service, its threads
    "scaffold.tracing.langsmith_report",  # the LangSmith SDK's client: HTTP to the service, its threads
    "comet_engine.skills.cli",
    "scaffold.skill_eval.generator",  # runs the generator agent in a workspace of a backend
    "scaffold.skill_eval.generated",  # generates on a cache miss
    "scaffold.python.validation.expect",  # runs an inline task's commands, inside its workspace
)

Graph = Mapping[str, frozenset[str]]


def load_modules(root: Path = REPO, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    """Every module of *packages* under *root*, by dotted name."""
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if any(path.relative_to(root).is_relative_to(folder) for folder in DATA_FOLDERS):
                continue
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def imported(modules: Mapping[str, Path], module: str) -> Iterator[str]:
    """Every module name *module* imports, anywhere in it (top level, functions, TYPE_CHECKING blocks)."""
    path = modules[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules]
            # ``from pkg import submodule`` needs the submodule, not what the package defines.
            if len(submodules) < len(node.names):
                yield base
            yield from submodules


def _ancestors(module: str) -> set[str]:
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def direct_imports(modules: Mapping[str, Path], module: str) -> list[str]:
    """The project modules *module* names in its import statements (as the document lists them)."""
    found = set()
    for name in imported(modules, module):
        while name and name not in modules:  # ``from a.b import C``: the module is a.b
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)
    return sorted(found)


def graph(modules: Mapping[str, Path]) -> dict[str, frozenset[str]]:
    """module -> the project modules it depends on: each one it imports, and the packages around those
    that importing it runs (their ``__init__``), except its own packages, which are running already."""
    out: dict[str, frozenset[str]] = {}
    for module in modules:
        deps: set[str] = set()
        own = _ancestors(module)
        for name in direct_imports(modules, module):
            deps.add(name)
            deps.update(p for p in _ancestors(name) if p in modules and p not in own)
        out[module] = frozenset(deps)
    return out


def cycles(edges: Graph) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10 * len(edges)))
    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def room(module: str) -> str:
    """The room a module lives in on the top-level map: a package of ``scaffold`` or one of its loose
    modules; ``pytest_comet`` and ``comet_engine`` are a room each."""
    parts = module.split(".")
    if parts[0] != "scaffold" or len(parts) == 1:
        return parts[0]
    return ".".join(parts[:2])


def room_edges(edges: Graph) -> dict[str, frozenset[str]]:
    """room -> the other rooms its modules import."""
    out: dict[str, set[str]] = {room(m): set() for m in edges}
    for module, deps in edges.items():
        out[room(module)].update(room(d) for d in deps if room(d) != room(module))
    return {r: frozenset(deps) for r, deps in out.items()}


def floors(edges: Graph) -> dict[str, int]:
    """Each node's floor: 1 for a node that imports nothing of ours, else one above the highest floor
    it imports from (the longest chain of imports below it). ValueError on a cycle, which has no floors."""
    found = cycles(edges)
    if found:
        raise ValueError(f"import cycles between {found}: no floors")
    memo: dict[str, int] = {}

    def floor(node: str) -> int:
        if node not in memo:
            memo[node] = 1 + max((floor(d) for d in edges[node]), default=0)
        return memo[node]

    return {node: floor(node) for node in edges}


def is_io(module: str) -> bool:
    return any(fnmatch.fnmatchcase(module, pattern) for pattern in IO_MODULES)


# --- the document ---------------------------------------------------------------------------------------

_BEGIN = "<!-- generated: {name} (python -m tests.support.architecture); edit the code, not this -->"
_END = "<!-- end generated: {name} -->"


def _short(name: str) -> str:
    return " + ".join(part.removeprefix("scaffold.") for part in name.split(" + "))


def condensed(edges: Graph) -> dict[str, frozenset[str]]:
    """*edges* with each cycle drawn as one node, its members joined by `` + `` (the map shows a cycle as
    one room, which the rules forbid)."""
    name = {node: node for node in edges}
    for cycle in cycles(edges):
        for node in cycle:
            name[node] = " + ".join(cycle)
    out: dict[str, set[str]] = {name[n]: set() for n in edges}
    for node, deps in edges.items():
        out[name[node]].update(name[d] for d in deps if name[d] != name[node])
    return {n: frozenset(deps) for n, deps in out.items()}


def render_floors(edges: Graph) -> str:
    rooms = condensed(room_edges(edges))
    levels = floors(rooms)
    top = max(levels.values())
    width = max(len(_short(r)) for r in rooms)
    lines = ["```text"]
    for level in range(top, 0, -1):
        here = sorted(r for r in rooms if levels[r] == level)
        lines.append(f"floor {level:>2}  " + "  ".join(_short(r).ljust(width) for r in here).rstrip())
    lines.append("```")
    lines.append("")
    lines.append(
        f"{len(rooms)} rooms on {top} floors. A room is a package of `scaffold/` or one of the four modules that "
        "lie loose in it (named without `scaffold.`), or the plugin or the engine; its floor is one above the "
        "highest floor it imports from, so every import runs down. Import by import:"
    )
    lines.append("")
    lines.append("| room | imports from |")
    lines.append("|---|---|")
    for name in sorted(rooms, key=lambda r: (-levels[r], r)):
        deps = ", ".join(f"`{_short(d)}`" for d in sorted(rooms[name], key=lambda d: (-levels[d], d))) or "—"
        lines.append(f"| `{_short(name)}` ({levels[name]}) | {deps} |")
    return "\n".join(lines)


_ROW = re.compile(r"^\| `(?P<module>[\w.]+)` \| (?P<job>.*) \| (?P<imports>[^|]*) \|$")


def jobs_in(text: str) -> dict[str, str]:
    """The job each module's row of the document gives (the prose people keep)."""
    out = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            out[match["module"]] = match["job"].removeprefix("I/O. ").replace("\\|", "|")
    return out


def docstring_job(path: Path) -> str:
    """A module's first sentence: the job of a row nobody has written yet."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    paragraph = " ".join(doc.split("\n\n")[0].split()).removeprefix("I/O. ")
    match = re.match(r"(.+?\.)(?:\s|$)", paragraph)
    return match.group(1) if match else paragraph


def render_modules(modules: Mapping[str, Path], jobs: Mapping[str, str]) -> str:
    by_room: dict[str, list[str]] = {}
    for module in sorted(modules):
        by_room.setdefault(room(module), []).append(module)
    parts = []
    for name in sorted(by_room):
        parts.append(f"### {name}")
        parts.append("")
        parts.append("| module | job | imports (project modules) |")
        parts.append("|---|---|---|")
        for module in by_room[name]:
            job = jobs.get(module) or docstring_job(modules[module])
            job = ("I/O. " if is_io(module) else "") + job.replace("|", "\\|")
            imports = ", ".join(direct_imports(modules, module)) or "—"
            parts.append(f"| `{module}` | {job} | {imports} |")
        parts.append("")
    return "\n".join(parts).rstrip()


def _replace(text: str, name: str, body: str) -> str:
    begin, end = _BEGIN.format(name=name), _END.format(name=name)
    if begin not in text or end not in text:
        raise ValueError(f"docs/architecture.md: the markers of the generated part {name!r} are missing")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def render(text: str, modules: Mapping[str, Path] | None = None) -> str:
    """*text* (the document) with its generated parts made anew from the code."""
    modules = load_modules() if modules is None else modules
    edges = graph(modules)
    text = _replace(text, "floors", render_floors(edges))
    return _replace(text, "modules", render_modules(modules, jobs_in(text)))


def main() -> int:
    old = DOC.read_text(encoding="utf-8")
    new = render(old)
    if new != old:
        DOC.write_text(new, encoding="utf-8")
        print(f"rewrote {DOC.relative_to(REPO)}")
    else:
        print(f"{DOC.relative_to(REPO)} is up to date")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
