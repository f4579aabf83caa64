"""The layering docs/internals.md states, checked on the source: every ``kafkaseg`` import (at module level or in
a function) goes to the module's own layer or one above it in :data:`LAYERS`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: docs/internals.md's table, top to bottom: (layer, module prefixes under kafkaseg)
LAYERS = [
    ("errors", ["errors"]),
    ("wire, codecs", ["wire", "codecs"]),
    ("storage", ["storage"]),
    ("options, schema", ["options", "schema"]),
    ("decode", ["decode"]),
    ("entry check", ["entry_check"]),
    ("lookup", ["lookup"]),
    ("topic config, retention", ["topic_config", "retention"]),
    ("planning", ["planning"]),
    ("scan", ["scan"]),
    ("streaming", ["streaming"]),
    ("compaction", ["compaction", "compacted_table"]),
    ("spark", ["spark"]),
    ("cli", ["cli"]),
]
#: outside the flow: test-data writers (wire and errors only), and the package's lazy public names
SIDE = {"testing": ["errors", "wire, codecs"]}


def _layer(parts: list[str]) -> str | None:
    """The layer of module ``kafkaseg.<parts>`` (or of a name the package gives: ``from kafkaseg import X``);
    None for the package's own attributes (``__version__``)."""
    if not parts or parts[0].startswith("__"):
        return None
    import kafkaseg

    if len(parts) == 1 and parts[0] in kafkaseg._LAZY:  # noqa: SLF001 - the lazy names' home modules
        parts = kafkaseg._LAZY[parts[0]].split(".")[1:]  # noqa: SLF001
    elif len(parts) == 1 and hasattr(kafkaseg.errors, parts[0]) and parts[0][0].isupper():
        parts = ["errors"]
    for name, prefixes in LAYERS:
        if parts[0] in prefixes:
            return name
    if parts[0] in SIDE:
        return parts[0]
    raise AssertionError(f"kafkaseg.{'.'.join(parts)} is in no layer of docs/internals.md")


def _imports(path: Path):
    if path.suffix == ".pyx":  # Cython: its Python imports are plain lines (ast cannot parse the rest)
        for line, text in enumerate(path.read_text().splitlines(), 1):
            match = re.match(r"\s*(?:from\s+kafkaseg\.([\w.]+)\s+c?import|from\s+kafkaseg\s+import\s+(\w+))", text)
            if match:
                yield line, (match.group(1) or match.group(2)).split(".")
        return
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            parts = node.module.split(".")
            if parts[0] == "kafkaseg":
                if len(parts) == 1:  # from kafkaseg import codecs, errors, ...
                    for alias in node.names:
                        yield node.lineno, [alias.name]
                else:
                    yield node.lineno, parts[1:]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "kafkaseg" and len(parts) > 1:
                    yield node.lineno, parts[1:]


def test_imports_follow_the_documented_layers():
    order = {name: i for i, (name, _) in enumerate(LAYERS)}
    wrong = []
    files = [p for p in (ROOT / "kafkaseg").rglob("*") if p.suffix in (".py", ".pyx")]
    assert len(files) > 40
    for path in files:
        parts = list(path.relative_to(ROOT / "kafkaseg").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        own = _layer(parts)
        if own is None:
            continue  # kafkaseg/__init__.py: the public API's lazy names reach every layer
        for line, target in _imports(path):
            if target[0] in ("__init__",) or _layer(target) is None:
                continue
            to = _layer(target)
            if own in SIDE:
                ok = to == own or to in SIDE[own]
            else:
                ok = to not in SIDE and order[to] <= order[own]
            if not ok:
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {own} imports kafkaseg.{'.'.join(target)} ({to})")
    assert not wrong, "\n".join(wrong)


def test_the_documented_table_lists_these_layers():
    text = (ROOT / "docs/internals.md").read_text()
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ") and "`kafkaseg" in line]
    assert [r for r in rows if r not in ("layer",)] == [name for name, _ in LAYERS] + ["testing"]
