"""The import graph of docs/architecture.md holds: imports run only down, and nothing circles.

The layers themselves are import-linter contracts in pyproject.toml (`[tool.importlinter]`);
this test runs them, so an upward import fails the suite with the chain that breaks it. Module
circles are a separate check of our own over grimp's graph (import-linter has no contract for
them), and the last test proves the production entry points never load the sandbox.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]

#: Every package of ours; tests and bench stand outside the graph.
PACKAGES = (
    "foundation",
    "upstream",
    "reconciliation",
    "app",
    "workers",
    "migrations",
    "recon",
    "sandbox",
)


def import_cycles(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, int]] = [(start, 0)]
        while work:
            node, child = work.pop()
            if child == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = graph.get(node, ())
            if child < len(targets):
                work.append((node, child + 1))
                target = targets[child]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[node] = min(low[node], index[target])
                continue
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return cycles


def test_the_layer_contracts_are_kept() -> None:
    lint = Path(sys.executable).with_name("lint-imports")
    result = subprocess.run(
        [str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_no_module_imports_itself_in_a_circle() -> None:
    graph = grimp.build_graph(*PACKAGES, exclude_type_checking_imports=True)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert import_cycles(edges) == []


def test_the_cycle_check_finds_a_circle_and_only_the_circle() -> None:
    graph = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"], "e": []}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": ["b"], "b": []}) == []


def test_production_entry_points_never_load_the_sandbox() -> None:
    probe = (
        "import sys\n"
        "import recon.cli.main, app.main, workers.worker_process, workers.scheduler\n"
        "loaded = sorted(m for m in sys.modules if m == 'sandbox' or m.startswith('sandbox.'))\n"
        "print(','.join(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == ""
