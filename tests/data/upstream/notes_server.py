"""A small MCP server over stdio, written against the protocol itself (no SDK: it starts in ~20 ms), that
keeps notes as files in a workspace folder — and misbehaves on request, to test how passhat's proxy
handles a hostile upstream.

    python notes_server.py ROOT [--mode MODE] [--http PORT]

With ``--http PORT`` it serves MCP's streamable HTTP transport on 127.0.0.1:PORT (JSON responses, no
session), well-behaved, and a request may name the notes folder and the identity in the ``X-Notes-Root``
and ``X-Notes-Identity`` headers (a server shared by many trials); otherwise stdio.

Tools: ``list_notes`` and ``read_note`` (read-only), ``write_note`` and ``delete_note``. A note whose name
starts ``locked-`` is refused with "permission denied" unless ``NOTES_IDENTITY`` is ``owner``.

Modes (each misbehaves on the first ``write_note`` call unless said otherwise):
``normal``; ``crash`` (exits with status 3); ``hang`` (never answers); ``garbage`` (prints a line that is
not JSON-RPC and never answers); ``garbage-then-answer`` (prints one, then answers); ``malformed`` (a
result whose ``content`` is not a list); ``truncated`` (half a JSON line); ``bad-schema`` (lists a tool
whose schema is not JSON Schema); ``exit-at-start`` (exits before ``initialize``); ``hang-at-start``
(never answers ``initialize``); ``many-tools`` (lists 1,000 more tools); ``deep-result`` (a text result
nested 100,000 levels deep); ``endless-body`` (over HTTP: a result whose body does not end);
``endless-line`` (over stdio: a result line that never ends, no newline); ``endless-line-at-start``
(the same as the answer to ``initialize``); ``large-result`` (a correct
text result of about ``NOTES_RESULT_BYTES`` characters, 8,000,000 unless set, on one line: numbered
lines of 8 characters, see :func:`large_text`);
``exit-in-trials`` (exits at start when ``NOTES_IDENTITY`` is set, as it is in a trial and not when the run
lists the tools); ``chatty`` (writes 100 kB on stderr at start).
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(sys.argv[1])
MODE = sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "normal"
IDENTITY = os.environ.get("NOTES_IDENTITY", "")
NAME = {"type": "string", "pattern": "^[a-z0-9-]+$", "description": "The note's name: lowercase letters, digits, -"}

TOOLS = [
    {"name": "list_notes", "description": "Names of every note, sorted.",
     "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
     "outputSchema": {"type": "object", "properties": {"result": {"type": "array", "items": {"type": "string"}}},
                      "required": ["result"]},
     "annotations": {"readOnlyHint": True}},
    {"name": "read_note", "description": "The text of one note.",
     "inputSchema": {"type": "object", "properties": {"name": NAME}, "required": ["name"], "additionalProperties": False},
     "annotations": {"readOnlyHint": True}},
    {"name": "write_note", "description": "Create or replace a note. Returns its name and size.",
     "inputSchema": {"type": "object", "properties": {"name": NAME, "text": {"type": "string", "minLength": 1}},
                     "required": ["name", "text"], "additionalProperties": False},
     "annotations": {"readOnlyHint": False, "idempotentHint": True}},
    {"name": "delete_note", "description": "Delete a note.",
     "inputSchema": {"type": "object", "properties": {"name": NAME}, "required": ["name"], "additionalProperties": False},
     "annotations": {"readOnlyHint": False, "destructiveHint": True}},
]
if MODE == "bad-schema":
    TOOLS.append({"name": "broken_tool", "description": "Its schema is not JSON Schema.",
                  "inputSchema": {"type": "object", "properties": {"x": {"type": "nonsense"}}}})


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text(value: str, error: bool = False) -> dict:
    return {"content": [{"type": "text", "text": value}], "isError": error}


def large_text(size: int) -> str:
    """``size // 8`` numbered lines (``0000000\\n``, ``0000001\\n``, ...): a lost or repeated piece shows."""
    return "".join(f"{i:07d}\n" for i in range(size // 8))


def note(name: str) -> Path:
    return ROOT / "notes" / f"{name}.txt"


def call(name: str, args: dict) -> dict:
    if name == "list_notes":
        names = sorted(p.stem for p in (ROOT / "notes").glob("*.txt"))
        return {"content": [{"type": "text", "text": json.dumps(names)}], "structuredContent": {"result": names}}
    if not re.fullmatch(r"[a-z0-9-]+", str(args.get("name", ""))):
        return text(f"bad note name {args.get('name')!r}", error=True)
    path = note(args["name"])
    if name == "read_note":
        return text(path.read_text()) if path.exists() else text(f"no note named {args['name']}", error=True)
    if args["name"].startswith("locked-") and IDENTITY != "owner":
        return text(f"Error executing tool {name}: permission denied: note {args['name']} is locked for "
                    f"{IDENTITY or 'anonymous'}", error=True)
    if name == "write_note":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(args["text"])
        return {"content": [{"type": "text", "text": json.dumps({"name": args["name"], "bytes": len(args["text"])})}]}
    if name == "delete_note":
        if not path.exists():
            return text(f"no note named {args['name']}", error=True)
        path.unlink()
        return text(json.dumps({"deleted": args["name"]}))
    return text(f"unknown tool {name}", error=True)


def endless_line(request_id: int) -> None:
    """The start of an answer whose line never ends."""
    sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {request_id}, "result": {{"content": [{{"type": "text", "text": "')
    for _ in range(1 << 14):  # 1 GB at most, for the test's own sake: passhat stops reading far sooner
        sys.stdout.write("x" * 65536)
    sys.stdout.flush()


def misbehave(request_id: int) -> bool:
    """Misbehave as MODE says on a write_note call; True when the call was answered (or never will be)."""
    if MODE == "crash":
        sys.stderr.write("notes server: segfault-like crash while writing\n")
        sys.stderr.flush()
        os._exit(3)
    if MODE == "hang":
        time.sleep(3600)
    if MODE in ("garbage", "garbage-then-answer"):
        sys.stdout.write("DEBUG: writing note now (this line is not JSON-RPC)\n")
        sys.stdout.flush()
        return MODE == "garbage"
    if MODE == "malformed":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"content": "not a list"}})
        return True
    if MODE == "deep-result":
        send({"jsonrpc": "2.0", "id": request_id, "result": text("[" * 100_000 + "]" * 100_000)})
        return True
    if MODE == "endless-line":
        endless_line(request_id)
        return True
    if MODE == "large-result":
        size = int(os.environ.get("NOTES_RESULT_BYTES", 8_000_000))
        send({"jsonrpc": "2.0", "id": request_id, "result": text(large_text(size))})
        return True
    if MODE == "truncated":
        sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {request_id}, "result": {{"content": [\n')
        sys.stdout.flush()
        return True
    return False


def answer(message: dict) -> dict | None:
    """The response to one request (``None`` for a notification)."""
    method, request_id = message.get("method"), message.get("id")
    if request_id is None:
        return None
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
            "serverInfo": {"name": "notes", "version": "1.0"}}}
    if method == "tools/list" and MODE == "many-tools":
        many = [{"name": f"tool_{i}", "inputSchema": {"type": "object"}} for i in range(1000)]
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS + many}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": request_id, "result": {"tools": TOOLS}}
    if method == "tools/call":
        params = message["params"]
        return {"jsonrpc": "2.0", "id": request_id, "result": call(params["name"], params.get("arguments") or {})}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": request_id, "result": {}}
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": f"no method {method}"}}


def serve_stdio() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("method") == "initialize" and MODE == "hang-at-start":
            time.sleep(3600)
        if message.get("method") == "initialize" and MODE == "endless-line-at-start":
            endless_line(message["id"])
        if message.get("method") == "tools/call" and message["params"]["name"] == "write_note" \
                and misbehave(message["id"]):
            continue
        response = answer(message)
        if response is not None:
            send(response)


def serve_http(port: int) -> None:
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (the http.server API)
            global ROOT, IDENTITY  # a shared server: each request says whose notes (one request at a time)
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            if MODE == "endless-body" and body.get("method") == "tools/call":
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"jsonrpc": "2.0", "id": %d, "result": {"content": [{"type": "text", "text": "'
                                 % body["id"])
                for _ in range(1 << 14):  # 1 GB at most, for the test's own sake: passhat stops reading far sooner
                    self.wfile.write(b"x" * 65536)
                return
            ROOT = Path(self.headers.get("x-notes-root") or sys.argv[1])
            IDENTITY = self.headers.get("x-notes-identity", os.environ.get("NOTES_IDENTITY", ""))
            response = answer(body)
            data = json.dumps(response).encode() if response is not None else b""
            self.send_response(200 if response is not None else 202)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (no server-sent event stream)
            self.send_response(405)
            self.send_header("content-length", "0")
            self.end_headers()

        do_DELETE = do_GET  # noqa: N815 (no session to end)

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write(f"notes server: {format % args}\n")

    HTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    sys.stderr.write(f"notes server ({MODE}) on {ROOT}\n")
    sys.stderr.flush()
    if MODE == "exit-at-start" or (MODE == "exit-in-trials" and IDENTITY):
        sys.stderr.write("fatal: cannot open the notes folder\n")
        sys.exit(1)
    if MODE == "chatty":
        for i in range(1000):
            sys.stderr.write(f"chatty line {i:04d} " + "x" * 80 + "\n")
        sys.stderr.flush()
    if "--http" in sys.argv:
        serve_http(int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        serve_stdio()


if __name__ == "__main__":
    main()
