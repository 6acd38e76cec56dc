"""Imports point one way (STYLE.md): sessions_app asks policies_app to decide, never the reverse,
and openclaw_common, which both import, imports neither. Read from the source with `ast`, so an
import inside a function counts as much as one at the top of a module.

Migrations are read too. A policies_app migration still names sessions_app in strings: in
`dependencies` (0001 follows sessions_app 0002; 0004 follows 0006) and as foreign-key targets
(0001 created Delivery with FKs to sessions_app.Session before it moved). Those are not
imports: they are edges of the migration graph over one database, which Django resolves by app
label without loading sessions_app's code, and they are history that cannot be rewritten. So
they are allowed; only Python imports (and the app registry, below) are checked.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# package -> the packages it must not import
FORBIDDEN = {
    "policies_app": ("sessions_app",),
    "openclaw_common": ("sessions_app", "policies_app"),
}
DYNAMIC_IMPORTS = {"import_module", "__import__"}
# apps.get_model("sessions_app", ...) is an import by another name; migrations need it (their
# models come from the state), other modules do not.
REGISTRY_LOOKUPS = {"get_model", "get_app_config"}


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def absolute(module: str | None, level: int, package: str) -> str:
    """The absolute name a relative import refers to (`from ..x import y` in a.b.c → a.x)."""
    if not level:
        return module or ""
    parts = package.split(".")
    base = parts[: len(parts) - (level - 1)] if level - 1 <= len(parts) else []
    return ".".join([*base, *([module] if module else [])])


def imports(path: Path, root: Path) -> Iterator[tuple[int, str]]:
    """(line, module) for each module a file imports or looks up, wherever in the file."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    in_migrations = "migrations" in path.relative_to(root).parts
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = absolute(node.module, node.level, package)
            # Each name under its module: in `from a import b`, b may be the module a.b.
            for alias in node.names:
                yield node.lineno, f"{base}.{alias.name}" if base else alias.name
        elif isinstance(node, ast.Call) and node.args:
            called = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            looked_up = called in REGISTRY_LOOKUPS and not in_migrations
            if called in DYNAMIC_IMPORTS or looked_up:
                yield node.lineno, first.value


def violations(package: str, root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted((root / package).rglob("*.py")):
        for line, module in sorted(imports(path, root)):
            if module.split(".")[0] in FORBIDDEN[package]:
                found.append(f"{path.relative_to(root)}:{line} imports {module}")
    return found


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_point_one_way(package):
    assert violations(package) == []


def test_the_check_finds_lazy_relative_and_dynamic_imports(tmp_path):
    # A check that finds nothing in the project has to be shown to find something.
    source = tmp_path / "policies_app"
    (source / "migrations").mkdir(parents=True)
    (source / "__init__.py").write_text("")
    (source / "fine.py").write_text("from . import policy\nfrom openclaw_common import keys\n")
    (source / "bad.py").write_text(
        "import json\n"
        "def later():\n"
        "    from sessions_app.models import Session\n"
        "    import sessions_app.delivery\n"
        "from .. import sessions_app\n"
        "importlib.import_module('sessions_app.store')\n"
        "apps.get_model('sessions_app', 'Session')\n"
    )
    (source / "migrations" / "0001_x.py").write_text(
        "dependencies = [('sessions_app', '0002_run_engine')]\n"
        "to = 'sessions_app.session'\n"
        "apps.get_model('sessions_app', 'Session')\n"
    )
    assert violations("policies_app", root=tmp_path) == [
        "policies_app/bad.py:3 imports sessions_app.models.Session",
        "policies_app/bad.py:4 imports sessions_app.delivery",
        "policies_app/bad.py:5 imports sessions_app",
        "policies_app/bad.py:6 imports sessions_app.store",
        "policies_app/bad.py:7 imports sessions_app",
    ]


# --- The layers of sessions_app (STYLE.md, "Layers as folders") --------------------------------
# Each folder (or top-level module) of sessions_app, by layer from the ground up. A module may
# import its own layer and those below it, never one above: the run engine does not import the
# tools, the nouns do not start runs. The adapters (last) may import anything.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("lib",),  # primitives: no app imports at all (test below)
    ("models",),
    ("access",),
    ("rows", "send_modes", "state_log", "store", "transcript", "storage"),  # the nouns
    ("delivery",),
    ("runs",),
    ("acp",),
    ("reads", "manage"),
    ("tools",),
    ("api", "live", "mcp", "ui", "admin", "management", "templatetags", "apps", "acp_agents"),
    # The old dotted paths of manage/agents.py and manage/config.py, re-exported for one release
    # (scripts outside the repository import them); nothing in the app may import them.
    ("agents", "config"),
)
LAYER_OF = {part: rank for rank, parts in enumerate(LAYERS) for part in parts}
# Imports inside functions: each that remains, with why it cannot be at the top of its module.
# A new one fails the suite; a removed one should be removed here too.
LAZY_IMPORTS = {
    ("sessions_app/apps.py", "django_q.signals"): "Django's app registry must be ready first",
    ("sessions_app/apps.py", "sessions_app.access"): "ready() composes the app: API keys' last use",
    ("sessions_app/apps.py", "sessions_app.acp"): "ready() composes the app: the engine gets ACP",
    ("sessions_app/apps.py", "sessions_app.runs"): "ready() composes the app (engine, watchdog)",
    (
        "sessions_app/apps.py",
        "sessions_app.tools",
    ): "ready() composes the app: the engine gets tools",
    (
        "sessions_app/acp/runtime.py",
        "sessions_app.acp",
    ): "the ACP SDK (0.7 s of import) only where a turn runs, not at every django.setup",
}
TOP_LEVEL_MODULES_MAX = 12
APP = ("sessions_app", "policies_app", "openclaw_common")


def _app_modules(root: Path = ROOT) -> dict[str, Path]:
    found = {}
    for path in sorted((root / "sessions_app").rglob("*.py")):
        if "migrations" not in path.relative_to(root).parts:
            found[module_name(path, root)] = path
    return found


def _part(module: str) -> str:
    """The folder or top-level module of sessions_app that `module` is in."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _edges(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the sessions_app modules it imports (a name that is a module counts as it)."""
    modules = _app_modules(root)
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for _, imported in imports(path, root):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and imported != "sessions_app":
                targets.add(imported)
        edges[name] = targets
    return edges


def test_each_layer_imports_only_its_own_and_those_below():
    upward = []
    for module, targets in _edges().items():
        if module == "sessions_app":
            continue
        rank = LAYER_OF.get(_part(module))
        assert rank is not None, f"{module}: put its folder in LAYERS"
        for target in sorted(targets):
            if LAYER_OF.get(_part(target), -1) > rank:
                upward.append(f"{module} imports {target}")
    assert upward == []


def test_lib_imports_nothing_of_the_app():
    found = []
    for path in sorted((ROOT / "sessions_app" / "lib").rglob("*.py")):
        for line, module in imports(path, ROOT):
            outside = not module.startswith(("openclaw_common", "sessions_app.lib"))
            if module.startswith(APP) and outside:
                found.append(f"{path.relative_to(ROOT)}:{line} imports {module}")
    assert found == []


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in edges.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_import_circle_of_more_than_two_modules():
    assert [c for c in _circles(_edges()) if len(c) > 2] == []


def test_the_circle_check_finds_a_circle():
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(edges) == [["a", "b", "c"]]


def lazy_imports(root: Path = ROOT) -> set[tuple[str, str]]:
    """(file, package) of each project or Django-registry import inside a function."""
    found = set()
    for path in sorted((root / "sessions_app").rglob("*.py")):
        relative = path.relative_to(root)
        if "migrations" in relative.parts:
            continue
        name = module_name(path, root)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom):
                    base = absolute(node.module, node.level, package)
                    if base.startswith(APP) or base == "django_q.signals":
                        top = ".".join(base.split(".")[:2])
                        found.add((str(relative), top))
    return found


def test_imports_inside_functions_are_the_known_few():
    assert lazy_imports() == set(LAZY_IMPORTS)


def test_sessions_app_keeps_few_top_level_modules():
    top = [
        p.name
        for p in (ROOT / "sessions_app").glob("*.py")
        if p.name not in ("__init__.py", "apps.py")
    ]
    assert len(top) <= TOP_LEVEL_MODULES_MAX, sorted(top)


TOOL_API = {"TOOL", "DECLARATION"}


def test_tool_modules_are_only_tools_to_the_rest_of_the_app():
    """Outside tools/, a tool module gives its TOOL or DECLARATION and nothing else: what two
    callers share lives in the layer below (reads/, runs/, access/...)."""
    tool_modules = {
        module_name(p, ROOT)
        for p in (ROOT / "sessions_app" / "tools").glob("*.py")
        if p.name not in ("__init__.py", "declaration.py", "registry.py", "shapes.py", "offer.py")
    }
    found = []
    for path in sorted((ROOT / "sessions_app").rglob("*.py")):
        relative = path.relative_to(ROOT)
        if relative.parts[1] in ("tools", "migrations"):
            continue
        name = module_name(path, ROOT)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(), filename=str(path))
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = absolute(node.module, node.level, package)
            for alias in node.names:
                if base in tool_modules and alias.name not in TOOL_API:
                    found.append(f"{relative}:{node.lineno} takes {alias.name} from {base}")
                if f"{base}.{alias.name}" in tool_modules:
                    aliases[alias.asname or alias.name] = f"{base}.{alias.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr not in TOOL_API
            ):
                found.append(f"{relative}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    assert found == []
