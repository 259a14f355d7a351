"""The layers of README's Layout hold: import-linter's contracts in pyproject.toml, and no import cycle."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

importlinter_cli = pytest.importorskip("importlinter.cli", reason="import-linter is in the dev extra")
grimp = pytest.importorskip("grimp", reason="import-linter's import graph")

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_import_linter_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = importlinter_cli.lint_imports(config_filename=str(PYPROJECT), no_cache=True, no_logo=True)
    assert exit_code == importlinter_cli.EXIT_STATUS_SUCCESS, capsys.readouterr().out


def _allowed_imports() -> set[tuple[str, str]]:
    """The imports the acyclic contract ignores (pyproject.toml says why)."""
    contracts = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]["contracts"]
    [acyclic] = [c for c in contracts if c["type"] == "acyclic_siblings"]
    pairs = (line.split(" -> ") for line in acyclic.get("ignore_imports", []))
    return {(importer.strip(), imported.strip()) for importer, imported in pairs}


def test_no_module_imports_one_that_imports_it_back() -> None:
    # import-linter's acyclic contract compares siblings only, so a package and a module inside it that
    # import each other (device and device.speed_of_light did) pass it: the graph sees every module.
    graph = grimp.build_graph("cudasmith", exclude_type_checking_imports=True, cache_dir=None)
    for importer, imported in _allowed_imports():
        graph.remove_import(importer=importer, imported=imported)
    cycles = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is not None:
                cycles.append(" -> ".join((importer, *back)))
    assert not cycles, "import cycles:\n" + "\n".join(cycles)
