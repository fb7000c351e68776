"""The tool server's bounds on every connection (serve/http11.py), met by raw sockets as a stranger would:
small limits, so a deadline passes in a fraction of a second; bounded waits, never a sleep "long enough"."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from passhat.cases import load_suite
from passhat.domain import load_domain
from passhat.episode import Episode
from passhat.runner.records import TrialRecord
from passhat.runner.trial import run_trial
from passhat.serve import ToolServer, TrialEndpoint
from passhat.serve.http11 import MAX_DRAIN, HttpLimits

NOTES = Path(__file__).parents[1] / "data" / "notes"
CASE = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
QUICK = HttpLimits(head_timeout_s=0.2, body_timeout_s=0.2, idle_timeout_s=0.2)
WAIT_S = 10.0
"""A bound on every wait for the server's answer (never reached when the server does its job)."""

Body = Callable[[ToolServer, TrialEndpoint], Awaitable[Any]]


def trial(tmp_path: Path, body: Body, *, limits: HttpLimits = QUICK, extra: str = "") -> tuple[Any, TrialRecord]:
    """Run one notes trial whose agent is ``body`` on an open endpoint of a server with ``limits``; returns what
    ``body`` returned and the trial's record."""
    folder = tmp_path / "cases"
    folder.mkdir(exist_ok=True)
    (folder / "c.yaml").write_text(CASE + extra)
    case = load_suite(str(folder)).cases[0]
    out: list[Any] = []

    async def go() -> TrialRecord:
        async with ToolServer(mcp=False, limits=limits) as server:
            async def agent(episode: Episode) -> str:
                async with server.trial(episode) as endpoint:
                    out.append(await body(server, endpoint))
                return "added"

            return await run_trial(case, load_domain(str(NOTES / "domain.py")), agent, 0, 1)

    record = asyncio.run(go())
    return out[0], record


def in_thread(work: Callable[[], Any]) -> Awaitable[Any]:
    """Blocking socket work off the event loop (the server must keep running meanwhile)."""
    return asyncio.get_running_loop().run_in_executor(None, work)


def connect(server: ToolServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded by the socket's timeout)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    return data


def request(endpoint: TrialEndpoint, method: str, path: str, body: bytes = b"", *, token: bool = True) -> bytes:
    where = endpoint.url.split("//", 1)[1].split("/", 1)[1]
    head = f"{method} /{where}{path} HTTP/1.1\r\nhost: a\r\ncontent-length: {len(body)}\r\n"
    if token:
        head += f"authorization: Bearer {endpoint.token}\r\n"
    return head.encode() + b"\r\n" + body


def read_answer(sock: socket.socket) -> tuple[int, bytes]:
    """One answer with a content-length: its status and body."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
    while len(body) < length:
        body += sock.recv(65536)
    return int(head.split(b" ")[1]), body


# --- deadlines ---------------------------------------------------------------------------------------------


def test_a_connection_that_says_nothing_is_closed_without_an_answer(tmp_path: Path) -> None:
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> bytes:
        return await in_thread(lambda: read_all(connect(server)))

    got, _ = trial(tmp_path, body)
    assert got == b""


def test_a_head_that_stalls_gets_408_and_the_connection_closed(tmp_path: Path) -> None:
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> bytes:
        def stall() -> bytes:
            with connect(server) as sock:
                sock.sendall(b"GET /trials/x HTTP/1.1\r\nhost: a\r\n")  # and never the rest
                return read_all(sock)

        return await in_thread(stall)

    got, _ = trial(tmp_path, body)
    assert got.startswith(b"HTTP/1.1 408 ") and b"connection: close" in got
    assert got.endswith(b"request head not received within 0.2 s")


def test_a_body_that_stalls_gets_408_and_no_call_is_made(tmp_path: Path) -> None:
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> bytes:
        def stall() -> bytes:
            with connect(server) as sock:
                whole = request(endpoint, "POST", "/tools/add_note", json.dumps({"title": "call mom"}).encode())
                sock.sendall(whole[:-5])  # the body's last bytes never come
                return read_all(sock)

        return await in_thread(stall)

    got, record = trial(tmp_path, body)
    assert got.startswith(b"HTTP/1.1 408 ") and got.endswith(b"request body not received within 0.2 s")
    assert record.calls == []  # the tool was never called with half its arguments


def test_an_idle_kept_alive_connection_is_closed_after_its_deadline(tmp_path: Path) -> None:
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[int, bytes]:
        def idle() -> tuple[int, bytes]:
            with connect(server) as sock:
                sock.sendall(request(endpoint, "GET", "/tools"))
                status, _ = read_answer(sock)
                return status, read_all(sock)  # then nothing more from us: the server closes, saying nothing

        return await in_thread(idle)

    (status, after), _ = trial(tmp_path, body)
    assert status == 200 and after == b""


# --- bodies answered before they were read ---------------------------------------------------------------


def test_a_refused_request_with_a_small_body_keeps_its_connection_and_a_huge_one_closes_it(tmp_path: Path) -> None:
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[int, int, bytes]:
        def refused() -> tuple[int, int, bytes]:
            with connect(server) as sock:
                sock.sendall(request(endpoint, "POST", "/tools/add_note", b"x" * 5000, token=False))
                first, _ = read_answer(sock)
                sock.sendall(request(endpoint, "GET", "/tools"))  # the same connection goes on
                second, _ = read_answer(sock)
            with connect(server) as sock:
                declared = b"POST /trials/x/tools/a HTTP/1.1\r\nhost: a\r\ncontent-length: %d\r\n\r\n" % (MAX_DRAIN + 1)
                sock.sendall(declared)
                return first, second, read_all(sock)  # 401, then closed: not read and dropped

        return await in_thread(refused)

    (first, second, huge), _ = trial(tmp_path, body)
    assert (first, second) == (401, 200)
    assert huge.startswith(b"HTTP/1.1 401 ")


# --- how many connections ----------------------------------------------------------------------------------


def test_at_the_connection_cap_the_longest_waiting_idle_connection_makes_room(tmp_path: Path) -> None:
    limits = HttpLimits(max_connections=4)

    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[int, list[bytes]]:
        def crowd() -> tuple[int, list[bytes]]:
            silent = [connect(server) for _ in range(4)]
            time.sleep(0.05)  # the four are open (connect returns once the kernel accepted; the loop must see them)
            with connect(server) as sock:
                sock.sendall(request(endpoint, "GET", "/tools"))
                status, _ = read_answer(sock)
            silent[0].settimeout(WAIT_S)
            first = read_all(silent[0])  # the one waiting longest was closed to make room
            for s in silent:
                s.close()
            return status, [first]

        return await in_thread(crowd)

    (status, [first]), _ = trial(tmp_path, body, limits=limits)
    assert status == 200 and first == b""


def test_at_the_connection_cap_with_every_connection_busy_a_new_one_gets_503(tmp_path: Path) -> None:
    limits = HttpLimits(max_connections=3)
    held = "faults: [{tool: list_notes, kind: timeout, times: 3}]\n"  # each call's answer is withheld: busy

    async def body(server: ToolServer, endpoint: TrialEndpoint) -> bytes:
        assert server.service is not None
        busy = [await in_thread(lambda: connect(server)) for _ in range(3)]
        for sock in busy:
            sock.sendall(request(endpoint, "POST", "/tools/list_notes", b"{}"))
        deadline = time.monotonic() + WAIT_S
        while len(server.service.busy()) < 3:
            assert time.monotonic() < deadline, "the three calls never reached the server"
            await asyncio.sleep(0.01)
        got = await in_thread(lambda: read_all(connect(server)))
        for sock in busy:
            sock.close()
        return got

    got, record = trial(tmp_path, body, limits=limits, extra=held)
    assert got.startswith(b"HTTP/1.1 503 ") and got.endswith(b"more than 3 open connections; try again")
    assert [c.status for c in record.calls] == ["fault"] * 3  # the busy ones were not disturbed


# --- one trial's abuse, another trial's calls --------------------------------------------------------------


PROBER = """
import socket, sys, time
header = b"GET /trials/x HTTP/1.1\\r\\nx-probe: " + b"a" * (32 << 20)
while True:
    time.sleep(float(sys.argv[2]))
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10) as sock:
        try:
            sock.sendall(header)
        except OSError:  # refused and closed mid-send: the answer came first
            pass
        answer = sock.recv(64)
    sys.stdout.buffer.write(b"4" if answer.startswith(b"HTTP/1.1 431 ") else b"?")
    sys.stdout.flush()
"""
"""A stranger's process: 32 MiB header probes every PAUSE seconds (argv[2]), each answer reported by a byte."""


def test_a_32_mib_header_flood_is_refused_while_another_trials_calls_go_on(tmp_path: Path) -> None:
    """A stranger's process floods the server with 32 MiB header probes (each refused at 32 KiB), 200 a second at
    most (6 GB/s offered), while a trial's client (httpx2, as agents use) makes calls, in interleaved rounds with
    and without the probes. Every probe is refused with 431 and every call is answered and recorded; before the
    head was bounded, one probe held the server 26.7 s. How much the flood slows the calls (the issue's ≤ 2×) is
    a wall-clock ratio, so bench/bench_serve_abuse.py measures and prints it (paced: 1.01×; unpaced, one of
    this machine's two CPUs busy in the kernel: 2.7×) rather than a unit test asserting it."""
    rounds, calls, pause = 3, 9, 0.005
    answers: list[bytes] = []

    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[list[float], list[float]]:
        quiet: list[float] = []
        noisy: list[float] = []
        async with httpx2.AsyncClient(headers={"authorization": f"Bearer {endpoint.token}"}, timeout=WAIT_S) as http:
            async def timed() -> list[float]:
                times = []
                for _ in range(calls):
                    t = time.perf_counter()
                    (await http.post(f"{endpoint.url}/tools/list_notes", json={})).raise_for_status()
                    times.append(time.perf_counter() - t)
                return times

            for _ in range(rounds):
                quiet += await timed()
                prober = await asyncio.create_subprocess_exec(sys.executable, "-c", PROBER, str(server.port),
                                                              str(pause), stdout=asyncio.subprocess.PIPE)
                assert prober.stdout is not None
                try:
                    answers.append(await asyncio.wait_for(prober.stdout.read(1), WAIT_S))  # the flood is on
                    noisy += await timed()
                finally:
                    prober.kill()
                    answers.append(await prober.stdout.read())
                    await prober.wait()
        return quiet, noisy

    (quiet, noisy), record = trial(tmp_path, body, extra="limits: {max_steps: 200}\n")
    probes = b"".join(answers)
    assert len(probes) >= rounds and set(probes) == {ord("4")}, probes  # every probe was refused with 431
    assert len(record.calls) == 2 * rounds * calls and len(quiet) == len(noisy) == rounds * calls
    assert all(c.status == "ok" for c in record.calls)


# --- OTLP ---------------------------------------------------------------------------------------------------


def test_a_protobuf_trace_request_that_does_not_decode_is_a_400_not_a_500(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.proto", reason="needs opentelemetry-proto: pip install 'passhat[otel]'")

    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[int, bytes]:
        def post() -> tuple[int, bytes]:
            with connect(server) as sock:
                raw = request(endpoint, "POST", "/otlp/v1/traces", b"\xff\xff\xff\xff not protobuf")
                sock.sendall(raw.replace(b"\r\n\r\n", b"\r\ncontent-type: application/x-protobuf\r\n\r\n", 1))
                return read_answer(sock)

        return await in_thread(post)

    (status, answer), _ = trial(tmp_path, body)
    assert status == 400
    assert json.loads(answer)["error"].startswith("not an OTLP trace request: ValueError: not a protobuf ")


# --- a conversation that stays in step -----------------------------------------------------------------------


def test_a_refusal_before_100_continue_closes_the_connection_instead_of_reading_the_next_request_as_a_body(
        tmp_path: Path) -> None:
    """A client that sends ``Expect: 100-continue`` waits for the go-ahead before its body; a refusal (a bad token)
    answered before the body was asked for means the body never comes. Kept alive, the connection took the
    client's next request for that body and answered nothing until the body deadline (408)."""
    async def body(server: ToolServer, endpoint: TrialEndpoint) -> tuple[bytes, bytes]:
        def talk() -> tuple[bytes, bytes]:
            with connect(server) as sock:
                raw = request(endpoint, "POST", "/tools/add_note", b"x" * 40, token=False)
                head = raw[:raw.index(b"\r\n\r\n")] + b"\r\nexpect: 100-continue\r\n\r\n"  # the body is not sent
                sock.sendall(head)
                status, _ = read_answer(sock)
                try:  # the server has closed, or is closing: the send or the read may meet a reset
                    sock.sendall(request(endpoint, "GET", "/tools"))
                    after = read_all(sock)
                except OSError:
                    after = b""
                return str(status).encode(), after

        return await in_thread(talk)

    (status, after), _ = trial(tmp_path, body)
    assert status == b"401" and after == b""  # closed with the refusal: the client reconnects for its next request


def test_an_answer_sent_whole_keeps_the_connection_for_the_next_request_even_if_the_handler_fails_after() -> None:
    """The application raised after its whole answer: the next request on the connection is still answered."""
    from passhat.serve.http11 import HttpService

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})
        if scope["path"] == "/raise-after":
            raise RuntimeError("after the answer")

    async def go() -> bytes:
        server = await asyncio.get_running_loop().create_server(HttpService(app, QUICK).protocol, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /raise-after HTTP/1.1\r\nhost: a\r\n\r\nGET /next HTTP/1.1\r\nhost: a\r\n\r\n")
        got = b""
        while got.count(b"ok") < 2:
            chunk = await asyncio.wait_for(reader.read(1000), WAIT_S)
            if not chunk:
                break
            got += chunk
        writer.close()
        server.close()
        return got

    assert asyncio.run(go()).count(b"HTTP/1.1 200 OK") == 2


def test_an_answer_of_known_length_leaves_in_one_write_and_a_handler_failing_before_its_body_still_sends_the_head() -> None:
    """The head of an answer with a content-length waits for its body and goes out in the same write; an
    application that fails (or returns) between the two sends the head before the connection closes, so a
    client sees a broken answer, never a silent close after its request was read (``localhttp`` would send
    such a request again)."""
    from passhat.serve.http11 import HttpService

    writes: list[bytes] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        if scope["path"] == "/raise":
            raise RuntimeError("before the body")
        if scope["path"] == "/return":
            return
        await send({"type": "http.response.body", "body": b"ok"})

    def counted() -> asyncio.Protocol:
        """The server's protocol, with every write of its transport noted."""
        conn = service.protocol()
        made = conn.connection_made

        def connection_made(transport: Any) -> None:
            write = transport.write
            transport.write = lambda data: (writes.append(bytes(data)), write(data))
            made(transport)

        conn.connection_made = connection_made  # type: ignore[method-assign]
        return conn

    service = HttpService(app, QUICK)

    async def go(path: str) -> bytes:
        server = await asyncio.get_running_loop().create_server(counted, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(f"GET {path} HTTP/1.1\r\nhost: a\r\n\r\n".encode())
        got = b""
        while chunk := await asyncio.wait_for(reader.read(1000), WAIT_S):
            got += chunk
            if path == "/whole" and got.endswith(b"ok"):
                break
        writer.close()
        server.close()
        return got

    whole = asyncio.run(go("/whole"))
    assert writes == [whole] and whole.startswith(b"HTTP/1.1 200 OK\r\n") and whole.endswith(b"\r\n\r\nok")
    for path in ("/raise", "/return"):
        writes.clear()
        got = asyncio.run(go(path))
        assert got.startswith(b"HTTP/1.1 200 OK\r\n") and got.endswith(b"\r\n\r\n") and writes == [got], (path, got)
