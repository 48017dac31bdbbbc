"""The scratch's tables are described once per schema, not again by every step of a rebuild."""

from __future__ import annotations

from reconciliation.rebuild.facets import tables_in
from reconciliation.store.models import Base


def test_a_schema_is_described_once_and_each_caller_gets_its_own_mapping() -> None:
    first, second = tables_in("recon_rebuild"), tables_in("recon_rebuild")
    assert set(first) == set(Base.metadata.tables)
    # The same Table objects: no second copy of the metadata (and compiled statements reused).
    assert all(first[name] is second[name] for name in first)
    assert first["postings"].schema == "recon_rebuild"
    first.pop("postings")
    assert "postings" in tables_in("recon_rebuild")
    assert tables_in("elsewhere")["postings"].schema == "elsewhere"
    assert tables_in(None)["postings"] is Base.metadata.tables["postings"]
