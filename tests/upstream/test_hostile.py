"""Upstream servers that misbehave (tests/data/upstream/notes_server.py --mode ...): each gets a message
naming the server and the tool; a failure mid-trial is a tool error the agent sees and the trial goes on;
a failure at start is bad input before any trial; nothing recorded is lost."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from passhat import capped_http
from passhat.cli import main
from passhat.domain import Domain
from passhat.errors import DomainError
from passhat.upstream import Upstream
from tests.upstream.conftest import NOTES_SERVER, NOTES_WS, notes_domain, trial

AFTER = [("write_note", {"name": "plans", "text": "go north"}), ("read_note", {"name": "todo"})]
"""A write the server misbehaves on, then a read: the trial goes on after the failure."""

MID_TRIAL = {
    "crash": "upstream server 'notes' closed the connection during tools/call 'write_note' (it exited or closed its output)",
    "hang": "upstream server 'notes' did not answer tools/call 'write_note' within 0.5s",
    "garbage": "upstream server 'notes' did not answer tools/call 'write_note' within 0.5s; it wrote 1 line(s) that "
               "are not JSON-RPC on stdout, the first: 'DEBUG: writing note now (this line is not JSON-RPC)' "
               "(Invalid JSON: expected value at line 1 column 1)",
    "truncated": "upstream server 'notes' did not answer tools/call 'write_note' within 0.5s; it wrote 1 line(s) "
                 "that are not JSON-RPC on stdout, the first: '{\"jsonrpc\": \"2.0\", \"id\": 3, \"result\": "
                 "{\"content\": [' (Invalid JSON: EOF while parsing a list at line 1 column 51)",
    "malformed": "upstream server 'notes' answered tools/call 'write_note' with a malformed result: 1 validation "
                 "error for CallToolResult content Input should be a valid list",
}


@pytest.mark.parametrize("mode", list(MID_TRIAL))
@pytest.mark.usefixtures("quick_shutdown")
def test_a_server_failing_mid_trial_is_a_tool_error_and_the_trial_goes_on(mode: str) -> None:
    domain = notes_domain(mode, timeout=0.5)
    record = trial(domain, AFTER)
    write, read = record.calls
    assert write.status == "exception" and write.error.startswith(f"UpstreamError: {MID_TRIAL[mode]}")
    assert record.end_reason == "completed" and record.outcome == "pass"  # the agent chose to go on and finish
    [log] = record.upstreams
    if mode in ("crash", "hang"):  # the server is gone or stuck: the read fails too, and says so
        assert read.status == "exception" and "tools/call 'read_note'" in read.error
    if mode == "crash":
        assert "segfault-like crash while writing" in log.stderr  # its last words are in the record
    if mode in ("garbage", "truncated"):
        assert log.problems and log.problems[0].startswith("not JSON-RPC on stdout: ")
    if mode == "malformed":  # the server is fine otherwise
        assert read.status == "ok"


def test_a_line_of_garbage_before_a_good_answer_is_kept_but_harmless() -> None:
    record = trial(notes_domain("garbage-then-answer"), AFTER)
    assert [c.status for c in record.calls] == ["ok", "ok"]
    assert record.upstreams[0].problems == [
        "not JSON-RPC on stdout: 'DEBUG: writing note now (this line is not JSON-RPC)' "
        "(Invalid JSON: expected value at line 1 column 1)"]


BEFORE_ANY_TRIAL = {
    "exit-at-start": r"upstream server 'notes' \(.*notes_server.py .* --mode exit-at-start\) exited, or closed its "
                     r"stdout, before answering initialize and tools/list\n--- its stderr ---\n.*fatal: cannot open "
                     r"the notes folder",
    "hang-at-start": r"upstream server 'notes' did not answer initialize and tools/list within 0.5s",
    "bad-schema": r"upstream server 'notes': tool 'broken_tool': inputSchema is not a valid JSON Schema at "
                  r"properties/x/type: 'nonsense' is not valid",
    "many-tools": r"upstream server 'notes' lists more than 1000 tools \(1004 so far\); no agent is given that many",
}


@pytest.mark.parametrize("mode", list(BEFORE_ANY_TRIAL))
@pytest.mark.usefixtures("quick_shutdown")
def test_a_server_that_does_not_start_or_lists_a_bad_schema_is_bad_input(mode: str) -> None:
    domain = notes_domain(mode, start_timeout=0.5)
    with pytest.raises(DomainError, match=r"(?s)^domain 'notebook': " + BEFORE_ANY_TRIAL[mode]):
        assert domain.tools


def test_a_command_that_does_not_exist_or_a_placeholder_the_world_lacks_is_bad_input() -> None:
    from passhat.domain import Domain
    from passhat.upstream import Upstream

    missing = Domain("notebook", workspace=NOTES_WS, policy="", tools=[], mcp=Upstream("stdio:/nonexistent/notes-mcp"))
    with pytest.raises(DomainError, match="upstream server 'notes-mcp': cannot start '/nonexistent/notes-mcp': "
                                          "No such file or directory"):
        assert missing.tools
    no_db = Domain("notebook", workspace=NOTES_WS, policy="", tools=[],
                   mcp=Upstream("stdio:mcp-server-sqlite --db-path {sqlite_path}"))
    with pytest.raises(DomainError, match=r"upstream server 'mcp-server-sqlite': command: unknown placeholder "
                                          r"\{sqlite_path\} \(this world has no sqlite_path"):
        assert no_db.tools
    with pytest.raises(DomainError, match="the target is 'stdio:COMMAND ARGS' or 'http://HOST:PORT/PATH'"):
        Upstream("notes-mcp --stdio")


def test_a_server_that_fails_to_start_in_a_trial_makes_it_an_infrastructure_error() -> None:
    domain = notes_domain("exit-in-trials")  # lists its tools, then exits at the start of every trial
    assert "write_note" in domain.tools
    record = trial(domain, AFTER)
    assert record.outcome == "error"  # the team's server, not the agent: retried, never counted as a failure
    assert "exited, or closed its stdout, before answering initialize" in record.error
    assert "fatal: cannot open the notes folder" in record.error
    assert [c.status for c in record.calls] == ["exception", "exception"]  # what the agent saw is kept
    assert record.upstreams[0].failed_to_start == record.error


def test_a_text_result_nested_100_000_deep_reaches_the_agent_as_the_text_it_is() -> None:
    record = trial(notes_domain("deep-result"), AFTER)
    assert [c.status for c in record.calls] == ["ok", "ok"]
    assert record.calls[0].result == "[" * 100_000 + "]" * 100_000  # not parsed: past any parser's stack


@pytest.mark.usefixtures("quick_shutdown")
def test_an_answer_over_http_that_never_ends_is_dropped_at_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capped_http, "MAX_ANSWER_BYTES", 1 << 20)  # 64 MB in a run
    http = Upstream("http://127.0.0.1:{port}/mcp", name="notes",
                    start=f"{{python}} {NOTES_SERVER} {{workspace}} --http {{port}} --mode endless-body")
    record = trial(Domain("notebook", workspace=NOTES_WS, policy="", tools=[], mcp=http), AFTER)
    write = record.calls[0]
    assert write.status == "exception" and write.error == (
        "UpstreamError: upstream server 'notes' sent an answer larger than 1 MB and the connection was dropped "
        "there; tools/call 'write_note' not answered")
    assert record.end_reason == "completed"  # the agent saw a tool error and went on


@pytest.mark.usefixtures("quick_shutdown")
def test_a_line_over_stdio_that_never_ends_is_failed_at_the_cap_and_the_server_stopped(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capped_http, "MAX_ANSWER_BYTES", 1 << 20)  # 64 MB in a run
    record = trial(notes_domain("endless-line", timeout=60), AFTER)  # at the time-out, the error would say so
    write, read = record.calls
    too_long = "upstream server 'notes' wrote a line longer than 1 MB on stdout (a JSON-RPC message is one line) " \
               "and was stopped there"
    assert write.status == "exception" and write.error == f"UpstreamError: {too_long}; tools/call 'write_note' not answered"
    assert read.status == "exception" and read.error == f"UpstreamError: {too_long}; tools/call 'read_note' not answered"
    assert record.end_reason == "completed"  # the agent saw tool errors and went on


@pytest.mark.usefixtures("quick_shutdown")
def test_a_line_that_never_ends_at_start_is_bad_input_naming_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(capped_http, "MAX_ANSWER_BYTES", 1 << 20)
    domain = notes_domain("endless-line-at-start", start_timeout=60)
    with pytest.raises(DomainError, match=r"^domain 'notebook': upstream server 'notes' wrote a line longer than "
                                          r"1 MB on stdout \(a JSON-RPC message is one line\) and was stopped there; "
                                          r"initialize and tools/list not answered"):
        assert domain.tools


def test_a_large_result_over_stdio_reaches_the_agent_whole() -> None:
    record = trial(notes_domain("large-result"), AFTER)  # 8 MB on one line
    assert [c.status for c in record.calls] == ["ok", "ok"]
    assert record.calls[0].result == "".join(f"{i:07d}\n" for i in range(1_000_000))


def test_a_servers_stderr_is_kept_bounded() -> None:
    record = trial(notes_domain("chatty"), [("list_notes", {})])
    [log] = record.upstreams
    assert log.stderr_bytes > 90_000 and len(log.stderr) < 17_000
    assert "chatty line 0000" in log.stderr and "chatty line 0999" in log.stderr and "characters left out" in log.stderr


def test_a_suite_whose_server_lists_a_bad_schema_stops_before_any_trial(tmp_path: Path) -> None:
    (tmp_path / "cases").mkdir()
    (tmp_path / "domain.py").write_text(textwrap.dedent(f"""
        from passhat.domain import Domain
        from passhat.upstream import Upstream
        domain = Domain("notebook", workspace={str(NOTES_WS)!r}, policy="", tools=[],
                        mcp=Upstream("stdio:{{python}} {NOTES_SERVER} {{workspace}} --mode bad-schema", name="notes"))
    """))
    (tmp_path / "cases" / "one.yaml").write_text("id: one\ndomain: ../domain.py\ninstruction: hi\n")
    out = tmp_path / "run"
    done = CliRunner().invoke(main, ["run", str(tmp_path / "cases"), "--agent", "noop", "--out", str(out)])
    assert done.exit_code == 2, done.output
    assert "upstream server 'notes': tool 'broken_tool': inputSchema is not a valid JSON Schema" in done.output
    assert not (out / "trials.jsonl").exists()


def test_a_servers_stderr_file_is_closed_with_the_server_and_its_log_outlives_it(tmp_path: Path) -> None:
    """The stderr file is read into the log and closed when the server stops: no unclosed file is left for the
    garbage collector (a ResourceWarning, an error under ``-W error::ResourceWarning``), and the log asked for
    again after close is the one close returned."""
    import asyncio
    import gc
    import shutil
    import sys
    import warnings

    from passhat.upstream.connection import Connection, Launch
    from passhat.upstream.log import UpstreamLog

    workspace = shutil.copytree(NOTES_WS, tmp_path / "ws")
    launch = Launch(name="notes", transport="stdio", env={"NOTES_IDENTITY": "ana"},
                    command=[sys.executable, str(NOTES_SERVER), str(workspace), "--mode", "chatty"])

    async def lifecycle() -> tuple[UpstreamLog, UpstreamLog, UpstreamLog]:
        connection = Connection(launch)
        await connection.ready()
        closed = await connection.close()
        return closed, connection.log(), await connection.close()

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", ResourceWarning)
        closed, later, again = asyncio.run(lifecycle())
        record = trial(notes_domain("chatty"), [("list_notes", {})])
        gc.collect()
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []
    assert later == again == closed
    assert "chatty line 0999" in closed.stderr and closed.stderr_bytes > 90_000
    assert "chatty line 0999" in record.upstreams[0].stderr  # a trial's record still has the server's stderr
