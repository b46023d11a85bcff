"""The layering rules of DESIGN.md, checked on the source: pytest_comet -> scaffold -> comet_engine, no import
cycles (function-local and TYPE_CHECKING imports counted), and pure modules that do no I/O.

Purity is computed, not listed: a module is pure unless it is one of the declared I/O modules (IO_MODULES:
what runs processes, opens sockets, talks to Docker or is pytest's plugin), and a pure module may reach
none of them, directly or through any chain of imports. So a new module is pure by default, and one that
starts a process without being declared, or a pure module that starts importing one, fails here.
"""

from __future__ import annotations

import ast
import fnmatch
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.architecture import (
    IO_MODULES,
    PACKAGES,
    REPO,
    cycles,
    graph,
    imported,
    is_io,
    load_modules,
    render,
    room_edges,
)

# External modules that mean I/O of the kinds pure code must not do: processes, sockets, Docker, pytest.
FORBIDDEN = (
    "pytest",
    "_pytest",
    "docker",
    "subprocess",
    "socket",
    "socketserver",
    "http.server",
    "http.client",
    "urllib.request",
    "requests",
    "ssl",
)


MODULES = load_modules(REPO)
EDGES = graph(MODULES)


def external(module: str) -> set[str]:
    """The external modules *module* imports, by full name."""
    return {name for name in imported(MODULES, module) if name.split(".")[0] not in PACKAGES}


def forbidden_in(module: str) -> list[str]:
    return sorted(n for n in external(module) if any(n == f or n.startswith(f + ".") for f in FORBIDDEN))


def reachable(module: str) -> dict[str, str]:
    """Every project module *module* reaches, each with the module that imports it on a shortest path."""
    seen: dict[str, str] = {}
    frontier = [module]
    while frontier:
        nxt = []
        for current in frontier:
            for dep in sorted(EDGES[current]):
                if dep not in seen and dep != module:
                    seen[dep] = current
                    nxt.append(dep)
        frontier = nxt
    return seen


def chain(module: str, target: str, via: dict[str, str]) -> str:
    steps = [target]
    while steps[-1] != module and steps[-1] in via:
        steps.append(via[steps[-1]])
    return " -> ".join(reversed(steps))


def test_no_import_cycles_among_the_project_modules() -> None:
    found = cycles(EDGES)
    detail = [", ".join(f"{m} -> {sorted(EDGES[m] & set(c))}" for m in c) for c in found]
    assert found == [], "\n".join(detail)


def test_the_cycle_check_sees_a_cycle_hidden_in_a_function_or_a_package(tmp_path: Path) -> None:
    """The check itself, on a small tree: a module importing another inside a function is a cycle, and so
    is one through a package's ``__init__``; a package importing its own submodule is not."""
    package = tmp_path / "scaffold"
    (package / "inner").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from scaffold.b import thing\n")
    (package / "b.py").write_text("def thing():\n    from scaffold import a\n    return a\n")
    (package / "inner" / "__init__.py").write_text("from scaffold.inner import leaf\nfrom scaffold import c\n")
    (package / "inner" / "leaf.py").write_text("X = 1\n")
    (package / "c.py").write_text("from scaffold.inner.leaf import X\n")  # runs inner/__init__, which imports c
    assert cycles(graph(load_modules(tmp_path, ("scaffold",)))) == [
        ["scaffold.a", "scaffold.b"],
        ["scaffold.c", "scaffold.inner"],
    ]


def test_no_cycles_among_the_rooms() -> None:
    """Packages (and scaffold's loose modules) import each other one way only: the top-level map is a
    stack of floors where every import runs down (docs/architecture.md, Floors)."""
    rooms = room_edges(EDGES)
    found = cycles(rooms)
    detail = [", ".join(f"{r} -> {sorted(rooms[r] & set(c))}" for r in c) for c in found]
    assert found == [], "\n".join(detail)


def test_the_room_check_sees_two_packages_that_import_each_other(tmp_path: Path) -> None:
    """No module imports itself back, yet the packages a and b lean on each other: a cycle of rooms."""
    package = tmp_path / "scaffold"
    for sub in ("a", "b"):
        (package / sub).mkdir(parents=True)
        (package / sub / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "a" / "x.py").write_text("from scaffold.b.y import Y\n")
    (package / "b" / "y.py").write_text("Y = 1\n")
    (package / "b" / "z.py").write_text("def later():\n    from scaffold.a.w import W\n    return W\n")
    (package / "a" / "w.py").write_text("W = 2\n")
    edges = graph(load_modules(tmp_path, ("scaffold",)))
    assert cycles(edges) == []
    assert cycles(room_edges(edges)) == [["scaffold.a", "scaffold.b"]]


def util_leaks(edges: dict[str, frozenset[str]]) -> list[str]:
    """Imports of scaffold.util's modules that reach the harness: plumbing imports nothing of ours but
    scaffold.errors, so every layer can use it and it can use none."""
    allowed = ("scaffold.errors", "scaffold.util")
    return sorted(
        f"{module} -> {dep}"
        for module, deps in edges.items()
        if module.startswith("scaffold.util")
        for dep in deps
        if not any(dep == a or dep.startswith(a + ".") for a in allowed)
    )


def test_util_imports_nothing_of_ours_but_errors() -> None:
    assert util_leaks(EDGES) == []


def test_the_util_check_sees_plumbing_that_imports_the_harness(tmp_path: Path) -> None:
    package = tmp_path / "scaffold"
    (package / "util").mkdir(parents=True)
    (package / "catalog").mkdir()
    for init in ("__init__.py", "util/__init__.py", "catalog/__init__.py"):
        (package / init).write_text("")
    (package / "errors.py").write_text("class CometError(Exception): ...\n")
    (package / "catalog" / "tasks.py").write_text("X = 1\n")
    (package / "util" / "fine.py").write_text("from scaffold.errors import CometError\n")
    (package / "util" / "leaky.py").write_text("def f():\n    from scaffold.catalog.tasks import X\n    return X\n")
    edges = graph(load_modules(tmp_path, ("scaffold",)))
    assert util_leaks(edges) == [
        "scaffold.util.leaky -> scaffold.catalog",
        "scaffold.util.leaky -> scaffold.catalog.tasks",
    ]


@pytest.mark.parametrize("module", sorted(m for m in MODULES if not is_io(m)))
def test_pure_modules_reach_no_io(module: str) -> None:
    assert forbidden_in(module) == [], f"{module} imports {forbidden_in(module)}: declare it in IO_MODULES or move it"
    via = reachable(module)
    bad = sorted(m for m in via if is_io(m) or forbidden_in(m))
    assert bad == [], "\n".join(chain(module, m, via) for m in bad)


def test_the_io_list_names_only_modules_that_exist() -> None:
    for pattern in IO_MODULES:
        assert any(fnmatch.fnmatchcase(m, pattern) for m in MODULES), pattern


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("scaffold")))
def test_scaffold_never_imports_the_plugin(module: str) -> None:
    assert not any(m.startswith("pytest_comet") for m in EDGES[module])


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("scaffold.python.")))
def test_validation_helpers_use_only_the_standard_library(module: str) -> None:
    """They are copied into workspaces where comet-eval is not installed."""
    names = {n.split(".")[0] for n in external(module)} - {"__future__"}
    assert names <= set(sys.stdlib_module_names)
    assert all(dep == "scaffold" or dep.startswith("scaffold.python") for dep in EDGES[module])


def test_engine_imports_nothing_of_ours() -> None:
    for module in MODULES:
        if module.startswith("comet_engine"):
            assert not any(m.split(".")[0] in ("scaffold", "pytest_comet") for m in EDGES[module]), module


def test_importing_scaffold_is_light() -> None:
    """Validation scripts import scaffold.python.validation.core: that must not load the harness."""
    code = (
        "import sys; import scaffold.python.validation.core; "
        "heavy = [m for m in ('pydantic', 'yaml', 'jinja2', 'pytest') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO)
    assert out.stdout.strip() == "[]"


PROBED = ("workspace", "agent", "backend", "simulator", "reporter", "tracing", "plugin", "outcome")
"""Names of objects whose members are declared (the contracts of workspaces/base.py and agents/base.py, the
outcomes of reports/outcome.py) and so are never asked whether they happen to have one."""


def test_no_probing_of_workspace_or_agent_members() -> None:
    """Every member a caller uses is declared on the protocols (scaffold.workspaces.base, agents.base) and
    the outcomes a session hands over: nothing asks an object whether it happens to have one."""
    probes = []
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
            ):
                target = ast.unparse(node.args[0]) if node.args else ""
                if any(word in target for word in PROBED):
                    probes.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    assert probes == []


def test_no_two_public_types_share_a_name() -> None:
    """A name means one thing in the project (a record's Verdict is not a report's verdict)."""
    defined: dict[str, list[str]] = {}
    for module, path in MODULES.items():
        for node in ast.parse(path.read_text(), str(path)).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                defined.setdefault(node.name, []).append(module)
    assert {name: where for name, where in defined.items() if len(where) > 1} == {}


def test_the_architecture_document_is_current() -> None:
    """docs/architecture.md's floors and module tables are what the code makes of them today."""
    doc = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert render(doc, MODULES) == doc, "run: .venv/bin/python -m tests.support.architecture"


# Where ``__file__`` may be climbed out of its package, and why (the built-in suite is never the reason).
CLIMBS_FROM_FILE = {
    "scaffold.workspaces.supervisor": "the folder scaffold is importable from, for the supervisor's python -S",
}


def locates_the_suite(source: str, module: str) -> list[str]:
    """What in *source* finds the built-in suite's files itself: a path built through its folder
    (``... / "local"``, ``Path("local/...")``), or a climb out of the module's package from ``__file__``
    (``Path(__file__).parents[2]``, ``.parent.parent``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            if isinstance(node.right, ast.Constant) and node.right.value == "local":
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func) in ("Path", "pathlib.Path", "os.path.join"):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).split("/")[0] == "local":
                    found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, (ast.Subscript, ast.Attribute)) and module not in CLIMBS_FROM_FILE:
            text = ast.unparse(node)
            climbs = (isinstance(node, ast.Subscript) and text.endswith("]") and ".parents[" in text) or (
                isinstance(node, ast.Attribute) and text.endswith(".parent.parent")
            )
            if climbs and "__file__" in text:
                found.append(f"{module}:{node.lineno}: {text}")
    return found


def test_only_the_catalog_locates_the_built_in_suite() -> None:
    """Every other module asks scaffold.catalog.builtin where the built-in tasks, treatments and suites are."""
    found = []
    for module, path in MODULES.items():
        if module != "scaffold.catalog.builtin" and not module.startswith("scaffold.python"):
            found += locates_the_suite(path.read_text(encoding="utf-8"), module)
    assert found == []


def test_the_suite_check_sees_each_way_of_finding_it() -> None:
    source = (
        "from pathlib import Path\n"
        "A = Path(__file__).resolve().parents[1] / 'local' / 'tasks'\n"
        "B = Path('local/logs')\n"
        "C = Path(__file__).parent.parent\n"
        "D = Path(__file__).parent / 'data.json'\n"  # beside the module: fine
    )
    found = locates_the_suite(source, "scaffold.x")
    assert sorted(found) == [
        "scaffold.x:2: Path(__file__).resolve().parents[1]",
        "scaffold.x:2: Path(__file__).resolve().parents[1] / 'local'",
        "scaffold.x:3: Path('local/logs')",
        "scaffold.x:4: Path(__file__).parent.parent",
    ]


FACE_LINES = 80
"""The most lines of code (docstring and blank lines aside) a face may hold: comet_engine's, the public API
of a library, is the longest (67)."""


def init_problems(source: str) -> list[str]:
    """What is wrong with a package's ``__init__`` (empty: nothing). It is either a face, which defines
    nothing (a docstring, imports, ``__all__``, ``__version__``, a lazy ``__getattr__``) and is short, or
    the package's main module, whose ``__all__`` lists only what it defines itself: a name of a sibling
    module is imported from that module, never through the package."""
    tree = ast.parse(source)
    body = tree.body[1:] if ast.get_docstring(tree) is not None else tree.body
    exported: list[str] = []
    defined: set[str] = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name != "__getattr__":
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
                exported = [str(e.value) for e in node.value.elts if isinstance(e, ast.Constant)]
            defined.update(names - {"__all__", "__version__"})
    if not defined:
        lines = sum(node.end_lineno - node.lineno + 1 for node in body if node.end_lineno is not None)
        return (
            [f"a face of {lines} lines (at most {FACE_LINES}): move its code into a module"]
            if lines > FACE_LINES
            else []
        )
    return [
        f"exports {name}, which it does not define: import it from its own module"
        for name in exported
        if name not in defined
    ]


@pytest.mark.parametrize("module", sorted(m for m, p in MODULES.items() if p.name == "__init__.py"))
def test_an_init_is_a_short_face_or_its_package_main_module(module: str) -> None:
    assert init_problems(MODULES[module].read_text(encoding="utf-8")) == []


def test_the_init_check_sees_a_long_face_and_a_main_module_that_reexports() -> None:
    face = '"""A face."""\nfrom a.b import c\n__all__ = ["c"]\n'
    assert init_problems(face) == []
    long_face = face + "from a.d import (\n" + "    e,\n" * FACE_LINES + ")\n"
    assert init_problems(long_face) == [
        f"a face of {FACE_LINES + 4} lines (at most {FACE_LINES}): move its code into a module"
    ]
    mixed = 'from a.b import c\n__all__ = ["c", "make"]\n\ndef make():\n    return c\n'
    assert init_problems(mixed) == ["exports c, which it does not define: import it from its own module"]


PYTEST_OWN_PLUGINS = ("terminalreporter",)
"""pytest's own plugins, which any plugin may ask pytest for by name."""
SUITE_FILES = sorted(
    p
    for folder in ("local/tests", "langsmith", "langfuse", "scaffold/builtin/suites")
    for p in (REPO / folder).rglob("*.py")
)
"""The suites' pytest entries: the packaged ones and the checkout's paths to them."""


def seam_problems(source: str, module: str) -> list[str]:
    """Where *source* runs a pytest session or reads a plugin object of ours by its name. Only the command
    line (scaffold.cli) runs pytest in-process, and what a session concluded reaches it through the
    plugin's hooks (pytest_comet/hooks.py), typed: never an object looked up by name and typed Any."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = ast.unparse(node.func)
        if func == "pytest.main" and not module.startswith("scaffold.cli"):
            found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("get_plugin", "getplugin"):
            name = node.args[0] if node.args else None
            if not (isinstance(name, ast.Constant) and name.value in PYTEST_OWN_PLUGINS):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_the_command_line_runs_pytest_and_no_one_reads_plugins_by_name() -> None:
    found = []
    for module, path in MODULES.items():
        found += seam_problems(path.read_text(encoding="utf-8"), module)
    for path in SUITE_FILES:
        found += seam_problems(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))
    assert found == []


def test_the_seam_check_sees_pytest_run_elsewhere_and_a_plugin_read_by_name() -> None:
    source = (
        "import pytest\n"
        "def run(config):\n"
        "    pytest.main(['x'])\n"
        "    reporter = config.pluginmanager.get_plugin('comet-reporter')\n"
        "    terminal = config.pluginmanager.get_plugin('terminalreporter')\n"
    )
    assert seam_problems(source, "scaffold.cli.eval.command") == [
        "scaffold.cli.eval.command:4: config.pluginmanager.get_plugin('comet-reporter')"
    ]
    assert seam_problems(source, "scaffold.session") == [
        "scaffold.session:3: pytest.main(['x'])",
        "scaffold.session:4: config.pluginmanager.get_plugin('comet-reporter')",
    ]


PROCESS_HELPER = "scaffold.util.run_process"
_STARTS = re.compile(r"^os\.(fork|forkpty|posix_spawnp?|spawn\w*|exec\w*|system|popen)$|^pty\.fork$")


def starts_processes(source: str, module: str) -> list[str]:
    """Where *source* starts a process itself: imports subprocess or multiprocessing, or calls one of
    os's process starters. Only the run-process helper may (a session of its own, the tree killed at the
    end and on timeout); the helpers that run inside a workspace (scaffold.python) bring their own."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        if any(n.split(".")[0] in ("subprocess", "multiprocessing") for n in names):
            found.append(f"{module}:{node.lineno}: imports {', '.join(names)}")
        if isinstance(node, ast.Call) and _STARTS.match(ast.unparse(node.func)):
            found.append(f"{module}:{node.lineno}: {ast.unparse(node.func)}()")
    return found


def test_every_process_starts_through_the_one_helper() -> None:
    found = []
    for module, path in MODULES.items():
        if module != PROCESS_HELPER and not module.startswith("scaffold.python"):
            found += starts_processes(path.read_text(encoding="utf-8"), module)
    assert found == []


def test_the_process_check_sees_subprocess_and_os_starters() -> None:
    source = (
        "import os\n"
        "import subprocess\n"
        "from multiprocessing import Pool\n"
        "def go():\n"
        "    subprocess.run(['x'], timeout=5)\n"
        "    os.posix_spawn('x', ['x'], {})\n"
        "    os.fork()\n"
        "    os.getpid()\n"
    )
    assert starts_processes(source, "m") == [
        "m:2: imports subprocess",
        "m:3: imports multiprocessing",
        "m:6: os.posix_spawn()",
        "m:7: os.fork()",
    ]
