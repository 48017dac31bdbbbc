"""The schema's history: released migrations stay as released, and the chain stays one line.

A deployed store is upgraded by replaying the migrations it has not run yet. If a released
migration were edited (or regenerated from the models, as the first one was before release), a
store that already ran it would never see the edit, and its schema would silently differ from a
fresh one. So every released migration is recorded here by the SHA-256 of its file: a change to
the schema must be a new migration (`make migration NAME=what_changed`), and adding one here is
part of releasing it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Final

from alembic.script import ScriptDirectory

from migrations import runner

VERSIONS: Final = Path(runner.SCRIPT_LOCATION) / "versions"

#: Released migrations and the SHA-256 of their files as released. 0001 is the store every
#: deployment before this record started from.
RELEASED: Final[dict[str, str]] = {
    "0001_initial_store.py": "7b0715bda4037cd2e0c2b5f20b00dbed7bc66423489d061cf6df2327d1895f36",
}


def test_released_migrations_are_unchanged() -> None:
    for name, recorded in RELEASED.items():
        digest = hashlib.sha256((VERSIONS / name).read_bytes()).hexdigest()
        assert digest == recorded, (
            f"{name} was edited after release; a deployed store that already ran it would never "
            "see the change. Restore it and put the change in a new migration: "
            "make migration NAME=what_changed"
        )


def test_the_history_is_one_line_from_the_first_release() -> None:
    script = ScriptDirectory.from_config(runner.alembic_config("sqlite://"))
    heads = script.get_heads()
    assert len(heads) == 1, f"the migrations branch: heads {heads}; merge them into one line"
    walked = [rev.revision for rev in script.walk_revisions()]
    assert walked[-1] == "0001", f"the history does not start at 0001: {walked}"
    files = sorted(p.name for p in VERSIONS.glob("[0-9]*.py"))
    assert len(files) == len(walked), f"{files} against revisions {walked}"
