"""The layering docs/internals.md states, checked on the source: its table (read from the doc itself, so the two
cannot drift) lists each layer's modules, and every ``kafkaseg`` import of a module (at module level or in a
function) goes to its own layer or one above it; only the spark layer (and jobs/) imports pyspark."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs/internals.md"
OUTSIDE_THE_FLOW = "testing"  # test-data writers: errors and wire only, and used by no layer


def _layers() -> list[tuple[str, list[str]]]:
    """``(layer, module paths)`` of the doc's table, top to bottom: ``kafkaseg/wire/``, ``kafkaseg/codecs.py``,
    ``pyspark_kafkaseg/`` (``jobs/`` is named in the cli row's prose, not as a module of it)."""
    layers = []
    for line in DOC.read_text().splitlines():
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 4 or not cells[2].startswith("`"):
            continue
        modules = [m for m in re.findall(r"`([\w/.]+)`", cells[2]) if m.startswith(("kafkaseg", "pyspark_kafkaseg"))]
        layers.append((cells[1], modules))
    return layers


LAYERS = _layers()


def _layer_of(path: str) -> str | None:
    """The layer of a module path (``kafkaseg/storage/fs.py``, ``kafkaseg/codecs``): the row with the longest
    module that contains it; None for the package itself (``kafkaseg/__init__.py``: lazy names only)."""
    best, found = -1, None
    for name, modules in LAYERS:
        for module in modules:
            stem = module[:-3] if module.endswith(".py") else module.rstrip("/")
            if (path == stem or path.startswith(stem + "/") or path == stem + ".py") and len(stem) > best:
                best, found = len(stem), name
    return found


def _target(parts: list[str]) -> str | None:
    """The layer ``kafkaseg.<parts>`` (or ``from kafkaseg import <name>``) is in; None for package attributes."""
    import kafkaseg

    if not parts or parts[0].startswith("__"):
        return None
    if len(parts) == 1 and parts[0] in kafkaseg._LAZY:  # noqa: SLF001 - the lazy names' home modules
        parts = kafkaseg._LAZY[parts[0]].split(".")[1:]  # noqa: SLF001
    elif len(parts) == 1 and parts[0][0].isupper() and hasattr(kafkaseg.errors, parts[0]):
        parts = ["errors"]
    layer = _layer_of("kafkaseg/" + "/".join(parts))
    assert layer is not None, f"kafkaseg.{'.'.join(parts)} is in no layer of {DOC.name}"
    return layer


def _imports(path: Path):
    """``(line, dotted module)`` of every absolute import in ``path``."""
    if path.suffix == ".pyx":  # Cython: its Python imports are plain lines (ast cannot parse the rest)
        for line, text in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"\s*(?:from\s+([\w.]+)\s+c?import\s+(\w[\w ,]*)|c?import\s+([\w.]+))", text)
            if match:
                if match.group(1) == "kafkaseg":
                    for name in match.group(2).split(","):
                        yield line, f"kafkaseg.{name.split()[0]}" if name.strip() else None
                else:
                    yield line, match.group(1) or match.group(3)
        return
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "kafkaseg":
                for alias in node.names:
                    yield node.lineno, f"kafkaseg.{alias.name}"
            else:
                yield node.lineno, node.module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name


def _sources():
    for top in ("kafkaseg", "pyspark_kafkaseg"):
        yield from (p for p in (ROOT / top).rglob("*") if p.suffix in (".py", ".pyx"))


def test_imports_follow_the_documented_layers():
    order = {name: i for i, (name, _) in enumerate(LAYERS)}
    wrong, checked = [], 0
    for path in _sources():
        relative = path.relative_to(ROOT).as_posix()
        own = _layer_of(relative.removesuffix("/__init__.py").removesuffix(".py").removesuffix(".pyx"))
        if relative == "kafkaseg/__init__.py":
            continue  # the public API's lazy names reach every layer
        assert own is not None, f"{relative} is in no layer of {DOC.name}"
        for line, module in _imports(path):
            if module is None:
                continue
            if module.split(".")[0] == "pyspark" and own != "spark":
                wrong.append(f"{relative}:{line}: {own} imports {module} (only the spark layer imports pyspark)")
            if module.split(".")[0] != "kafkaseg":
                continue
            to = _target(module.split(".")[1:])
            if to is None:
                continue
            checked += 1
            if own == OUTSIDE_THE_FLOW:
                ok = to in (own, "errors", "wire, codecs")
            else:
                ok = to != OUTSIDE_THE_FLOW and order[to] <= order[own]
            if not ok:
                wrong.append(f"{relative}:{line}: {own} imports {module} ({to})")
    assert checked > 300
    assert not wrong, "\n".join(wrong)


def test_the_table_names_every_layer_once():
    names = [name for name, _ in LAYERS]
    assert names[0] == "errors" and "spark" in names and names[-1] == OUTSIDE_THE_FLOW
    assert len(names) == len(set(names)) and all(modules for _, modules in LAYERS)
    assert "pyspark_kafkaseg/" in dict(LAYERS)["spark"]
