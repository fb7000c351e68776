"""``passhat init --from-mcp``: a starter suite around an MCP server that lints clean and runs."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from passhat.cli import main
from passhat.scaffold.database import dump_database
from passhat.scaffold.from_mcp import example_arguments
from tests.upstream.conftest import NOTES_SERVER


def test_a_starter_suite_around_a_server_on_a_workspace_lints_clean_and_runs(tmp_path: Path) -> None:
    folder = tmp_path / "notes-suite"
    target = f"stdio:{sys.executable} {NOTES_SERVER} {{workspace}}"
    made = CliRunner().invoke(main, ["init", str(folder), "--from-mcp", target, "--env", "NOTES_IDENTITY=owner"])
    assert made.exit_code == 0, made.output
    cases = sorted(p.name for p in (folder / "cases").iterdir())
    assert cases == ["delete-note-lost-response.yaml", "delete-note.yaml", "write-note-lost-response.yaml",
                     "write-note.yaml"]  # one per write tool, and its lost response
    lost = yaml.safe_load((folder / "cases" / "write-note-lost-response.yaml").read_text())
    assert lost["faults"] == [{"tool": "write_note", "kind": "drop_response", "on_call": 1, "seconds": 30}]
    assert "env={'NOTES_IDENTITY': 'owner'}" in (folder / "domain.py").read_text()
    lint = CliRunner().invoke(main, ["cases", "lint", str(folder / "cases")])
    assert lint.exit_code == 0 and "0 error(s), 0 warning(s)" in lint.output, lint.output
    run = CliRunner().invoke(main, ["run", str(folder / "cases"), "--agent", f"{folder / 'agent.py'}:agent",
                                    "--trials", "1", "--no-sanity", "--out", str(tmp_path / "run")])
    assert run.exit_code == 0, run.output
    again = CliRunner().invoke(main, ["init", str(folder), "--from-mcp", target])
    assert again.exit_code == 2 and "choose an empty folder or pass --force" in again.output


def test_a_server_without_write_tools_or_that_does_not_start_writes_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "nothing"
    failed = CliRunner().invoke(main, ["init", str(folder), "--from-mcp", "stdio:/nonexistent/server"])
    assert failed.exit_code == 2 and "cannot start '/nonexistent/server'" in failed.output
    assert not folder.exists()


@pytest.mark.parametrize(("target", "words"), [("ftp://x", "the target is 'stdio:COMMAND ARGS' or"),
                                               ("stdio:", "no command after 'stdio:'"),
                                               ("stdio:'a", "cannot split the command")])
def test_a_bad_target_is_named_as_the_option_the_user_typed(tmp_path: Path, target: str, words: str) -> None:
    """Not as ``mcp=Upstream(...)``, an object the user never wrote."""
    folder = tmp_path / "bad"
    failed = CliRunner().invoke(main, ["init", str(folder), "--from-mcp", target])
    assert failed.exit_code == 2 and failed.output.startswith(f"error: --from-mcp {target!r}: {words}"), failed.output
    assert "Upstream" not in failed.output and not folder.exists()


def test_a_sqlite_database_is_dumped_into_schema_and_rows(tmp_path: Path) -> None:
    db = tmp_path / "shop.db"
    with sqlite3.connect(db) as conn:
        conn.executescript("CREATE TABLE orders (id INTEGER PRIMARY KEY, status TEXT NOT NULL, total REAL, "
                           "customer TEXT REFERENCES people(name));"
                           "CREATE TABLE people (name TEXT PRIMARY KEY);"
                           "INSERT INTO people VALUES ('ana');"
                           "INSERT INTO orders VALUES (1, 'placed', 9.5, 'ana'), (2, 'shipped', 20, NULL);"
                           "CREATE INDEX orders_status ON orders(status);")
    dump = dump_database(str(db))
    assert dump.placeholder == "sqlite_path"
    assert dump.schema.startswith("CREATE TABLE orders (id INTEGER PRIMARY KEY") and "CREATE INDEX orders_status" in dump.schema
    assert list(dump.rows) == ["people", "orders"]  # a table after the ones it refers to: the rows insert in order
    assert dump.rows["orders"] == [{"id": 1, "status": "placed", "total": 9.5, "customer": "ana"},
                                   {"id": 2, "status": "shipped", "total": 20.0, "customer": None}]
    query = {"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer", "default": 5}},
             "required": ["query", "limit"]}
    assert example_arguments(query, dump) == {"query": "UPDATE orders SET id = id WHERE 1 = 0", "limit": 5}
    folder = tmp_path / "suite"  # the server's command named the file: each trial's server gets its own copy
    made = CliRunner().invoke(main, ["init", str(folder), "--from-mcp", f"stdio:{sys.executable} {NOTES_SERVER} {db}",
                                     "--db", str(db)])
    assert made.exit_code == 0, made.output
    domain = (folder / "domain.py").read_text()
    assert f"{NOTES_SERVER} {{sqlite_path}}'" in domain and "SqliteFile(data=HERE / \"fixtures\" / \"default.yaml\"" in domain
    lint = CliRunner().invoke(main, ["cases", "lint", str(folder / "cases")])
    assert lint.exit_code == 0 and "0 error(s), 0 warning(s)" in lint.output, lint.output
