"""The package's layout holds: imports only point down the layers, SQL stays in the store, the vocabulary is one.

Layers (docs/adr/0019-module-layout.md), lowest first: shared vocabulary and pure text helpers; engines and the
store; the services; the context that wires them; the evaluation harness; the faces. A module may import its own
layer or a lower one, never a higher one (function-level imports count too). A new top-level module must be given
a layer here. The faces of one layer do not import each other where that would tangle them: the REST API (``api``)
and the web page (``web``) know nothing of each other; ``server``, the HTTP composition root, assembles them (and
MCP) from the layer above, and ``cli`` runs it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import get_args

import kaynak
from kaynak.vocabulary import (
    KeywordRanking,
    KeywordRankingName,
    Language,
    LanguageName,
    SearchMode,
    SearchModeName,
)

PACKAGE = Path(kaynak.__file__).parent

LAYERS: dict[str, int] = {
    # 0: vocabulary, errors, settings and pure helpers (no I/O of their own)
    "": 0,
    "vocabulary": 0,
    "errors": 0,
    "types": 0,
    "text": 0,
    "globs": 0,
    "rules": 0,
    "config": 0,
    "langdetect": 0,
    "chunking": 0,
    "quotes": 0,
    "fusion": 0,
    "match": 0,
    "syntax": 0,
    "structure": 0,
    "access": 0,
    # 1: engines and storage
    "embeddings": 1,
    "loaders": 1,
    "store": 1,
    "upload_store": 1,
    "originals": 1,
    # 2: services
    "search": 2,
    "ingest": 2,
    "staleness": 2,
    "backup": 2,
    # 3: the wiring of one process
    "context": 3,
    # 4: the evaluation harness (runs searches through a context)
    "evaluation": 4,
    # 5: faces
    "api": 5,
    "mcp_server": 5,
    "web": 5,
    # 6: the roots that assemble faces: the HTTP app (REST + MCP + page) and the command line that serves it
    "server": 6,
    "cli": 6,
    "__main__": 6,
}

# Parts of one layer that must not import each other, either way.
SEPARATE = [("api", "web")]

# Modules allowed to talk to PostgreSQL directly: the store, and backup (pg_dump / pg_restore around it).
DATABASE_MODULES = {"store", "backup"}


def _part(module: str) -> str:
    """``kaynak.store.retrieval`` → ``store``; ``kaynak`` → ``""``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports() -> Iterator[tuple[str, str, str]]:
    """(importing file, its part, imported module) for every import in the package, at any depth."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        parts = list(rel.parts)
        package = parts[:-1]  # the package the file is in (for relative imports)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        module = ".".join(parts)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                    yield str(rel), _part(module), target
                    if node.module is None:  # from . import a, b
                        for alias in node.names:
                            yield str(rel), _part(module), f"{target}.{alias.name}"
                else:
                    yield str(rel), _part(module), node.module or ""
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield str(rel), _part(module), alias.name


def test_every_top_level_module_has_a_layer() -> None:
    found = {p.stem for p in PACKAGE.glob("*.py")} | {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    found = {"" if name == "__init__" else name for name in found}
    assert found <= set(LAYERS), f"give these a layer in tests/test_layout.py: {sorted(found - set(LAYERS))}"


def test_imports_only_point_down() -> None:
    upward = []
    for where, part, target in _imports():
        if target != "kaynak" and not target.startswith("kaynak."):
            continue
        to = _part(target)
        if to != part and LAYERS[to] > LAYERS[part]:
            upward.append(f"{where} imports {target} (layer {LAYERS[part]} → {LAYERS[to]})")
    assert not upward, "\n".join(upward)


def test_separate_faces_do_not_import_each_other() -> None:
    found = [
        f"{where} imports {target}"
        for where, part, target in _imports()
        for a, b in SEPARATE
        if (part, _part(target)) in {(a, b), (b, a)} and target.startswith("kaynak.")
    ]
    assert not found, "\n".join(found)


def test_the_package_imports_have_no_cycle() -> None:
    """Between top-level parts: no part imports one that (directly or not) imports it back."""
    edges: dict[str, set[str]] = {}
    for _, part, target in _imports():
        if target.startswith("kaynak.") and _part(target) != part:
            edges.setdefault(part, set()).add(_part(target))

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(nxt == goal or reaches(nxt, goal, seen | {nxt}) for nxt in edges.get(start, set()) - seen)

    cycles = sorted(p for p in edges if reaches(p, p, set()))
    assert not cycles, cycles


def test_only_the_store_talks_to_the_database() -> None:
    found = [
        f"{where} imports {target}"
        for where, part, target in _imports()
        if target.split(".")[0] in {"psycopg", "psycopg_pool"} and part not in DATABASE_MODULES
    ]
    assert not found, "\n".join(found)


def test_no_name_is_defined_in_two_parts_of_the_store() -> None:
    """``Store`` is a mixin of its parts: a name defined twice would silently shadow the other."""
    from kaynak.store import Store

    owners: dict[str, list[str]] = {}
    for part in Store.__mro__[:-1]:
        for name in vars(part):
            if not (name.startswith("__") and name.endswith("__")):
                owners.setdefault(name, []).append(part.__name__)
    assert not {n: o for n, o in owners.items() if len(o) > 1}


def test_vocabulary_literals_match_the_enums() -> None:
    assert set(get_args(SearchModeName)) == {m.value for m in SearchMode}
    assert set(get_args(KeywordRankingName)) == {r.value for r in KeywordRanking}
    assert set(get_args(LanguageName)) == {lang.value for lang in Language}


def test_the_web_page_names_every_search_mode() -> None:
    from kaynak.web.i18n import STRINGS

    for language, strings in STRINGS.items():
        missing = [m.value for m in SearchMode if f"mode_{m.value}" not in strings]
        assert not missing, (language, missing)


# ---------------------------------------------------------------------------------------------- tests and benchmarks
REPO = PACKAGE.parents[1]
TESTS = REPO / "tests"


def _top_imports(path: Path) -> set[str]:
    """The first name of every module ``path`` imports, at any depth."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


def test_tests_folders_mirror_the_package() -> None:
    """Every folder of tests/ (but fixture data) names a part of ``src/kaynak`` (tests/loaders/hostile lies under
    the loaders), so the tests of a module are where its path says."""
    for folder in sorted(p for p in TESTS.rglob("*") if p.is_dir() and "__pycache__" not in p.parts):
        rel = folder.relative_to(TESTS)
        if rel.parts[0] == "fixtures" or rel.parts[-1] == "hostile":
            continue
        assert (PACKAGE / rel).is_dir(), f"tests/{rel} mirrors no folder of src/kaynak"


def test_no_test_module_imports_another() -> None:
    """Shared helpers live in testkit/ and shared fixtures in a folder's conftest.py, never in a test module."""
    for path in sorted(TESTS.rglob("*.py")):
        bad = {m for m in _top_imports(path) if m.split(".")[-1].startswith(("test_", "conftest")) or m == "tests"}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def test_benchmarks_do_not_import_the_tests() -> None:
    """Benchmarks share testkit/ and benchmarks/common.py with the tests, never a module of tests/."""
    test_names = {p.stem for p in TESTS.rglob("*.py")}
    for path in sorted((REPO / "benchmarks").rglob("*.py")):
        bad = {m for m in _top_imports(path) if m.split(".")[0] in test_names | {"tests"}}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)} from tests/"
