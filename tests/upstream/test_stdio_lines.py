"""How passhat's stdio transport cuts a server's stdout into messages: whole lines, however the bytes
arrive, each line at most the cap (a server's endless line is refused, not buffered)."""

from __future__ import annotations

import pytest

pytest.importorskip("mcp", reason="needs the mcp extra: pip install 'passhat[mcp]'")

from mcp.shared.message import SessionMessage  # noqa: E402
from pydantic import ValidationError  # noqa: E402

from passhat.upstream.stdio import LineReader, LineTooLong, parse_line  # noqa: E402


def test_lines_are_whole_however_the_bytes_are_split() -> None:
    data = b'{"a": 1}\n\n{"b": "' + b"x" * 300 + b'"}\nhalf a li'
    for size in (1, 7, 64, len(data)):
        reader = LineReader(limit=1000)
        lines = [line for start in range(0, len(data), size) for line in reader.feed(data[start:start + size])]
        assert lines == [b'{"a": 1}', b"", b'{"b": "' + b"x" * 300 + b'"}']  # the unfinished line is not a message


def test_a_line_may_reach_the_limit_but_not_pass_it() -> None:
    reader = LineReader(limit=10)
    assert reader.feed(b"0123456789\n01234") == [b"0123456789"]
    with pytest.raises(LineTooLong):
        reader.feed(b"56789X")
    endless = LineReader(limit=1 << 20)
    with pytest.raises(LineTooLong):  # refused at the limit: nothing past it is held
        for _ in range(1 << 14):  # 1 GB if it were buffered
            endless.feed(b"x" * 65536)


def test_a_line_is_a_message_or_the_error_that_quotes_it() -> None:
    message = parse_line(b'{"jsonrpc": "2.0", "id": 1, "result": {"text": "caf\xc3\xa9 \xff"}}\r')
    assert isinstance(message, SessionMessage)
    assert message.message.model_dump()["result"] == {"text": "café \ufffd"}  # undecodable bytes replaced, as before
    error = parse_line(b"DEBUG: starting \xff")
    assert isinstance(error, ValidationError) and error.errors()[0]["input"] == "DEBUG: starting \ufffd"
