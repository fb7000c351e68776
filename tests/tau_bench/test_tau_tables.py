"""τ-bench records in SQLite: every record round-trips exactly, and a call reads and writes only what it touches."""

from __future__ import annotations

import sqlite3

import pytest

from passhat.errors import DomainError
from passhat.tau_bench.tables import Layout, TableView, views

RECORDS = {
    "a": {"id": "a", "n": 25, "x": 25.0, "flag": True, "note": None, "tags": ["t"], "where": {"city": "Oslo"}},
    "b": {"id": "b", "n": 3, "x": 1.5, "flag": False, "tags": [], "where": {}, "key": "has a field named key"},
}


def table(records: dict = RECORDS) -> tuple[sqlite3.Connection, Layout]:
    layout = Layout.of("things", records, "things.json")
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.execute(layout.schema())
    layout.insert(db, [layout.encode(k, r) for k, r in records.items()])
    return db, layout


def stored(db: sqlite3.Connection, layout: Layout) -> dict:
    return {row[0]: layout.decode(row) for row in db.execute(f"{layout.select} ORDER BY rowid")}


def test_records_round_trip_with_absent_null_and_number_types_kept() -> None:
    db, layout = table()
    assert layout.key == "_key"  # a record has a field `key`
    back = stored(db, layout)
    assert back == RECORDS and list(back["a"]) == list(RECORDS["a"])
    assert "note" not in back["b"] and back["a"]["note"] is None  # absent is not null
    assert type(back["a"]["n"]) is int and type(back["a"]["x"]) is float and back["a"]["flag"] is True
    # plain columns hold plain values a state assertion can compare; nested ones JSON text
    assert db.execute('SELECT n, id, "where" FROM things WHERE _key = ?', ("a",)).fetchone() == (25, "a", '{"city": "Oslo"}')


def test_a_view_loads_only_what_the_tool_reads_and_writes_back_only_changes() -> None:
    db, layout = table()
    queries: list[str] = []
    db.set_trace_callback(queries.append)
    view = TableView(db, layout)
    view["a"]["n"] = 26
    view["a"]["added_later"] = {"by": "a tool"}  # no column: kept in _more
    view["b"]["n"] = None  # a null in a plain column: kept in _more too
    assert "zzz" not in view
    assert sum(q.startswith("SELECT") for q in queries) == 3  # a, b, zzz: nothing else was read
    view.write_back()
    after = stored(db, layout)
    assert after["a"] == {**RECORDS["a"], "n": 26, "added_later": {"by": "a tool"}}
    assert after["b"]["n"] is None and "n" in after["b"]
    assert sum(q.startswith("UPDATE") for q in queries) == 2


def test_iteration_keeps_the_order_and_inserts_and_deletes_are_written() -> None:
    db, layout = table()
    view = TableView(db, layout)
    _ = view["b"]  # loaded before iterating: the order is still the table's
    view["c"] = {"id": "c", "n": 1}
    assert list(view) == ["a", "b", "c"] and len(view) == 3
    del view["a"]
    assert list(view.items())[0][0] == "b"
    untouched = TableView(db, layout)
    untouched.write_back()  # nothing read, nothing written
    view.write_back()
    assert list(stored(db, layout)) == ["b", "c"] and stored(db, layout)["c"] == {"id": "c", "n": 1}
    with pytest.raises(KeyError):
        TableView(db, layout)["a"]


def test_a_collection_that_is_not_keyed_records_is_refused_naming_the_file() -> None:
    with pytest.raises(DomainError, match=r"^flights\.json: a τ-bench collection is a JSON object of records"):
        Layout.of("flights", [{"id": 1}], "flights.json")
    assert set(views(sqlite3.connect(":memory:"), {"things": table()[1]})) == {"things"}
