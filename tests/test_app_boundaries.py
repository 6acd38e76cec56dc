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
