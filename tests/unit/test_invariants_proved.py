"""Every invariant of docs/architecture.md names the tests that prove it, and they name it back.

The doc lists, under each invariant, the tests that prove it; each of those tests says
"Invariant N: ..." in its docstring. This test keeps the two in step both ways, so that finding
the proof of an invariant is a look at the doc, and a test that claims an invariant is listed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ARCHITECTURE = REPO / "docs" / "architecture.md"

_ITEM = re.compile(r"^(\d+)\. \*\*")
_PROOF = re.compile(r"^\s+- `(tests/[^`:]+\.py)::(\w+)`$")
_CLAIM = re.compile(r"\bInvariant (\d+):")


def documented_proofs() -> dict[int, list[tuple[str, str]]]:
    """Invariant number -> (file, test) pairs, as the doc's Invariants section lists them."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Invariants\n", 1)[1].split("\n## ", 1)[0]
    proofs: dict[int, list[tuple[str, str]]] = {}
    current: int | None = None
    for line in section.splitlines():
        if found := _ITEM.match(line):
            current = int(found.group(1))
            proofs[current] = []
        elif (found := _PROOF.match(line)) and current is not None:
            proofs[current].append((found.group(1), found.group(2)))
    return proofs


def claimed_proofs() -> dict[tuple[str, str], set[int]]:
    """(file, test) -> the invariants its docstring says it proves, across the whole suite."""
    claims: dict[tuple[str, str], set[int]] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                numbers = {int(n) for n in _CLAIM.findall(ast.get_docstring(node) or "")}
                if numbers:
                    claims[(str(path.relative_to(REPO)), node.name)] = numbers
    return claims


def test_the_doc_numbers_its_invariants_from_one_without_a_gap() -> None:
    numbers = list(documented_proofs())
    assert numbers == list(range(1, len(numbers) + 1)), numbers
    assert len(numbers) >= 9


def test_every_invariant_is_proved_by_at_least_one_test() -> None:
    unproved = [n for n, tests in documented_proofs().items() if not tests]
    assert unproved == [], f"invariants no test proves: {unproved}"


def test_every_listed_test_exists_and_names_its_invariant() -> None:
    claims = claimed_proofs()
    wrong = [
        f"{path}::{name} (invariant {n})"
        for n, tests in documented_proofs().items()
        for path, name in tests
        if n not in claims.get((path, name), set())
    ]
    assert wrong == [], "listed in docs/architecture.md, but no such test names it: " + ", ".join(
        wrong
    )


def test_every_test_that_names_an_invariant_is_listed_under_it() -> None:
    listed = {(n, test) for n, tests in documented_proofs().items() for test in tests}
    unlisted = [
        f"{path}::{name} (invariant {n})"
        for (path, name), numbers in claimed_proofs().items()
        for n in sorted(numbers)
        if (n, (path, name)) not in listed
    ]
    assert unlisted == [], "add these to docs/architecture.md's Invariants: " + ", ".join(unlisted)
