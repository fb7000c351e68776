"""τ-bench records in SQLite: every record round-trips exactly; a call reads from memory, writes back only
the records it changed, and no trial sees another's changes."""

from __future__ import annotations

import copy
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

import passhat.tau_bench.store as store_module
from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.tau_bench.store import JsonCollections
from passhat.tau_bench.tables import Layout, TableView, views
from passhat.world import World

RECORDS = {
    "a": {"id": "a", "n": 25, "x": 25.0, "flag": True, "note": None, "tags": ["t"], "where": {"city": "Oslo"}},
    "b": {"id": "b", "n": 3, "x": 1.5, "flag": False, "tags": [], "where": {}, "key": "has a field named key"},
}
DATA = {"things": RECORDS, "users": {"u1": {"name": {"first": "Ada"}, "orders": ["a"], "balance": 10}}}


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


def test_a_collection_that_is_not_keyed_records_is_refused_naming_the_file() -> None:
    with pytest.raises(DomainError, match=r"^flights\.json: a τ-bench collection is a JSON object of records"):
        Layout.of("flights", [{"id": 1}], "flights.json")
    assert set(views(sqlite3.connect(":memory:"), {"things": table()[1]})) == {"things"}


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


@pytest.fixture(scope="module")
def store() -> tuple[JsonCollections, Domain]:
    store = JsonCollections(copy.deepcopy(DATA))
    return store, Domain("json-world", schema=store.schema(), fixtures={"default": store.load}, policy="")


def world(store: tuple[JsonCollections, Domain]) -> World:
    return store[1].restore("default", 0)


def statements(w: World) -> list[str]:
    """The SQL a world's connection runs from now on (the change log's own queries left out)."""
    seen: list[str] = []
    w.db.set_trace_callback(lambda sql: seen.append(sql) if "_passhat_log" not in sql else None)
    return seen


def state(w: World, s: JsonCollections) -> dict:
    return {name: stored(w.db, layout) for name, layout in s.layouts.items()}


def test_reads_by_key_and_scans_run_no_sql_and_write_nothing(store: Any) -> None:
    s, _ = store
    w = world(store)
    sql = statements(w)
    assert s.call(w, lambda data: data["things"]["a"]["where"]["city"]) == "Oslo"
    assert s.call(w, lambda data: [k for k, r in data["things"].items() if r["n"] > 1]) == ["a", "b"]
    assert s.call(w, lambda data: isinstance(data["users"]["u1"], dict) and "zz" not in data["users"])
    assert sql == [] and w.diff().rows() == []
    w.close()


def test_a_write_stores_only_the_record_it_changed_with_its_types(store: Any) -> None:
    s, _ = store
    w = world(store)

    def pay(data: dict) -> None:
        _ = [r["n"] for r in data["things"].values()]  # a scan first: reading is not changing
        data["users"]["u1"]["balance"] = 10.0  # same value, another type: τ-bench's hash sees it
        data["things"]["a"]["where"]["city"] = "Bergen"

    s.call(w, pay)
    written = w.db.execute("SELECT DISTINCT tbl, pk FROM _passhat_log").fetchall()  # every row a statement wrote
    assert sorted(map(tuple, written)) == [("things", '["a"]'), ("users", '["u1"]')]
    assert {(c.table, c.key[0]) for c in w.diff().rows()} == {("things", "a")}  # 10 vs 10.0: same by value
    after = state(w, s)
    assert type(after["users"]["u1"]["balance"]) is float and after["things"]["a"]["where"] == {"city": "Bergen"}
    assert s.call(w, lambda data: data["things"]["a"]["where"]["city"]) == "Bergen"  # the trial keeps it
    w.close()


def test_no_trial_sees_another_trials_changes(store: Any) -> None:
    s, _ = store
    one, two = world(store), world(store)
    s.call(two, lambda data: data["things"]["a"]["n"])  # two holds the shared records before one changes them
    s.call(one, lambda data: data["things"]["a"]["tags"].append("mine"))
    assert s.call(one, lambda data: list(data["things"]["a"]["tags"])) == ["t", "mine"]
    assert s.call(two, lambda data: list(data["things"]["a"]["tags"])) == ["t"]
    s.call(one, lambda data: (data["things"].pop("b"), data["things"].__setitem__("c", {"id": "c"})))
    assert s.call(one, lambda data: list(data["things"])) == ["a", "c"]
    assert s.call(two, lambda data: list(data["things"])) == ["a", "b"]  # the shared collection is put back
    one.close()
    three = world(store)
    assert s.call(three, lambda data: (list(data["things"]), list(data["things"]["a"]["tags"]))) == (["a", "b"], ["t"])
    two.close(), three.close()


def test_a_reset_readies_the_copy_a_call_needs_and_trials_stay_apart(store: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    s, _ = store
    one = world(store)
    s.call(one, lambda data: data["things"]["b"]["tags"].append("one"))  # the first change ever: copied in the call
    one.close()
    s.prepare()  # a reset: a spare copy of b, the shared record a call changed
    copies: list[tuple[str, str]] = []
    real = store_module.record
    monkeypatch.setattr(store_module, "record", lambda value, report, name, key: copies.append((name, key)) or
                        real(value, report, name, key))
    two, three = world(store), world(store)
    s.call(two, lambda data: data["things"]["b"]["tags"].append("two"))
    assert copies == []  # the spare took the changed record's place in the shared collection
    assert s.call(three, lambda data: list(data["things"]["b"]["tags"])) == []
    s.call(three, lambda data: data["things"]["b"]["tags"].append("three"))
    assert copies == [("things", "b")]  # no spare left: this call copies
    assert s.call(two, lambda data: list(data["things"]["b"]["tags"])) == ["two"]
    assert state(three, s)["things"]["b"]["tags"] == ["three"]
    two.close(), three.close()
    s.prepare()
    four = world(store)
    assert s.call(four, lambda data: data["things"]["b"]) == RECORDS["b"]
    four.close()


def test_inserts_and_deletes_keep_the_order_a_dict_would_have(store: Any) -> None:
    s, _ = store
    w = world(store)

    def change(data: dict) -> list[str]:
        data["things"]["c"] = {"id": "c", "n": 1, "extra": {"added": True}}
        del data["things"]["a"]
        return list(data["things"])

    assert s.call(w, change) == ["b", "c"]
    assert list(state(w, s)["things"]) == ["b", "c"] and state(w, s)["things"]["c"]["extra"] == {"added": True}
    assert s.call(w, lambda data: list(data["things"])) == ["b", "c"]
    assert sorted((c.kind, c.key[0]) for c in w.diff().rows()) == [("deleted", "a"), ("inserted", "c")]
    w.close()


CHANGES: dict[str, Callable[[dict], Any]] = {
    "dict set": lambda d: d["users"]["u1"]["name"].__setitem__("last", "L"),
    "dict del": lambda d: d["users"]["u1"]["name"].__delitem__("first"),
    "dict pop": lambda d: d["users"]["u1"]["name"].pop("first"),
    "dict popitem": lambda d: d["users"]["u1"]["name"].popitem(),
    "dict clear": lambda d: d["users"]["u1"]["name"].clear(),
    "dict update": lambda d: d["users"]["u1"]["name"].update(last="L"),
    "dict setdefault": lambda d: d["users"]["u1"]["name"].setdefault("last", "L"),
    "dict |=": lambda d: d["users"]["u1"]["name"].__ior__({"last": "L"}),
    "list append": lambda d: d["users"]["u1"]["orders"].append("b"),
    "list extend": lambda d: d["users"]["u1"]["orders"].extend(["b"]),
    "list +=": lambda d: d["users"]["u1"]["orders"].__iadd__(["b"]),
    "list *=": lambda d: d["users"]["u1"]["orders"].__imul__(2),
    "list insert": lambda d: d["users"]["u1"]["orders"].insert(0, "b"),
    "list pop": lambda d: d["users"]["u1"]["orders"].pop(),
    "list remove": lambda d: d["users"]["u1"]["orders"].remove("a"),
    "list clear": lambda d: d["users"]["u1"]["orders"].clear(),
    "list slice set": lambda d: d["users"]["u1"]["orders"].__setitem__(slice(0, 1), ["x", "y"]),
    "list del": lambda d: d["users"]["u1"]["orders"].__delitem__(0),
    "list sort": lambda d: (d["users"]["u1"]["orders"].append("0"), d["users"]["u1"]["orders"].sort()),
    "list reverse": lambda d: (d["users"]["u1"]["orders"].append("b"), d["users"]["u1"]["orders"].reverse()),
    "record set": lambda d: d["users"]["u1"].__setitem__("balance", 11),
    "collection set": lambda d: d["users"].__setitem__("u2", {"name": {}}),
    "collection pop": lambda d: d["users"].pop("u1"),
    "collection setdefault": lambda d: d["users"].setdefault("u2", {"name": {}}),
    "collection update": lambda d: d["users"].update({"u1": {"name": {}}}),
    "collection clear": lambda d: d["users"].clear(),
    "collection popitem": lambda d: d["users"].popitem(),
    "a container a tool added, changed in a later call": lambda d: d["users"]["u1"]["name"]["added"].append(1),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_way_of_changing_a_record_is_written(store: Any, change: str) -> None:
    s, _ = store
    w = world(store)
    if change.startswith("a container a tool added"):
        s.call(w, lambda d: d["users"]["u1"]["name"].__setitem__("added", []))
    before = state(w, s)
    expected = copy.deepcopy(s.call(w, lambda d: {"users": copy.deepcopy(d["users"])}))
    CHANGES[change](expected)  # the same change on plain dicts
    s.call(w, CHANGES[change])
    assert state(w, s)["users"] == expected["users"] != before["users"]
    w.close()


def test_a_container_put_in_a_second_place_inside_a_record_is_copied_so_each_place_changes_alone(store: Any) -> None:
    s, _ = store
    w = world(store)

    def share(data: dict) -> None:
        user = data["users"]["u1"]
        user["name"]["home"] = data["things"]["a"]["where"]  # another record's dict, put inside a field
        user["orders"].append(user["name"])  # another field's dict, put inside a list
        user["orders"].append({"deep": {"plain": ["made by the tool"]}})

    s.call(w, share)

    def change(data: dict) -> None:
        user = data["users"]["u1"]
        user["name"]["home"]["city"] = "Bergen"
        user["name"]["first"] = "Grace"
        user["orders"][-1]["deep"]["plain"].append("changed later")

    s.call(w, change)
    after = state(w, s)
    assert after["things"]["a"]["where"] == {"city": "Oslo"}
    assert after["users"]["u1"]["name"] == {"first": "Grace", "home": {"city": "Bergen"}}
    assert after["users"]["u1"]["orders"][1] == {"first": "Ada", "home": {"city": "Oslo"}}
    assert after["users"]["u1"]["orders"][2]["deep"]["plain"] == ["made by the tool", "changed later"]
    assert s.call(w, lambda data: data["users"]["u1"]) == after["users"]["u1"]  # memory and rows agree
    w.close()


def test_a_failed_call_changes_nothing_and_copies_are_not_records(store: Any) -> None:
    s, _ = store
    w = world(store)

    def fails(data: dict) -> None:
        data["things"]["a"]["where"]["city"] = "Bergen"
        data["things"]["z"] = {"id": "z"}
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        s.call(w, fails)
    assert s.call(w, lambda data: (data["things"]["a"]["where"]["city"], "z" in data["things"])) == ("Oslo", False)
    other = world(store)
    assert s.call(other, lambda data: data["things"]["a"]["where"]["city"]) == "Oslo"

    def copies(data: dict) -> None:
        copy.deepcopy(data["things"]["a"])["where"]["city"] = "X"
        data["things"]["a"].copy()["n"] = 0
        dict(data["things"]["a"])["tags"][:] = []  # a plain copy's list is still the record's (as in τ-bench)

    s.call(w, copies)
    assert state(w, s)["things"]["a"]["tags"] == [] and state(w, s)["things"]["a"]["where"] == {"city": "Oslo"}
    w.close(), other.close()


def test_the_records_follow_the_database_when_something_else_writes_or_rolls_back(store: Any) -> None:
    s, _ = store
    w = world(store)
    s.call(w, lambda data: data["users"]["u1"]["balance"])
    w.db.execute("UPDATE users SET balance = 99 WHERE key = 'u1'")  # not through a tool
    assert s.call(w, lambda data: data["users"]["u1"]["balance"]) == 99
    scope = w.call_scope()
    s.call(w, lambda data: data["users"]["u1"].__setitem__("balance", 5))
    scope.undo()  # the boundary undoes a call after the tool returned (a commit that failed)
    assert s.call(w, lambda data: data["users"]["u1"]["balance"]) == 99
    w.close()


def test_a_change_outside_a_call_and_a_replaced_collection_are_refused(store: Any) -> None:
    s, _ = store
    w = world(store)
    kept = s.call(w, lambda data: data["users"]["u1"])
    with pytest.raises(RuntimeError, match=r"users\['u1'\] changed outside a tool call"):
        kept["balance"] = 0
    with pytest.raises(DomainError, match="replaced a whole collection"):
        s.call(w, lambda data: data.__setitem__("users", {}))
    assert state(w, s)["users"]["u1"]["balance"] == 10
    w.close()
