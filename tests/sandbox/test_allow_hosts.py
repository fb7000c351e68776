"""``--agent-allow-host`` over IPv6, harness side and namespace side together: a name that resolves to an
IPv6 address only is written to the namespace's ``/etc/hosts``, listened on inside it, and relayed to that
address outside (here ``::1``: the only IPv6 address a test can count on), under either PID 1."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from passhat import sandbox
from passhat.agents import confined
from tests.sandbox.pid1s import pid1

__all__ = ["pid1"]  # a fixture, used by name

pytestmark = pytest.mark.skipif(sys.platform != "linux" or not os.path.exists("/proc/net/if_inet6"),
                                reason="IPv6 on Linux")


def test_parse_allow_host_takes_ipv6_in_brackets() -> None:
    from passhat.errors import PasshatError

    assert confined.parse_allow_host("[::1]:8443") == ("::1", 8443)
    assert confined.parse_allow_host("[2001:db8::1]") == ("2001:db8::1", 443)
    with pytest.raises(PasshatError, match=r"an IPv6 address goes in brackets, e.g. \[::1\]:8443"):
        confined.parse_allow_host("::1:8443")
    with pytest.raises(PasshatError, match="'example.com' in brackets is not an IPv6 address"):
        confined.parse_allow_host("[example.com]:443")
    with pytest.raises(PasshatError, match="expected HOST or HOST:PORT"):
        confined.parse_allow_host("[::1]8443")
    assert confined.AgentSandbox(allow_hosts=("[::1]:9",)).hosts[0].addresses == ("::1",)  # not looked up


def test_an_ipv6_only_name_is_reached_through_its_relay(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        pid1: str) -> None:
    real = socket.getaddrinfo

    def resolver(host: Any, port: Any, *args: Any, **kw: Any) -> Any:  # the name has an AAAA record only
        if host == "v6only.test":
            return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", port, 0, 0))]
        return real(host, port, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    work, sockets = tmp_path / "work", tmp_path / "sockets"
    work.mkdir()
    sockets.mkdir()

    async def go() -> tuple[bytes, bytes, str | None]:
        async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            writer.write(b"hello from outside: " + await reader.readline())
            await writer.drain()
            writer.close()

        outside = await asyncio.start_server(answer, "::1", 0)  # a service on this machine's ::1
        port = outside.sockets[0].getsockname()[1]
        options = confined.AgentSandbox(allow_hosts=(f"v6only.test:{port}",))
        script = f'exec 3<>/dev/tcp/v6only.test/{port} && echo ping >&3 && cat <&3'
        spec = sandbox.base_spec(["/bin/bash", "-c", script], str(work), [str(work)])
        spec.sockets = str(sockets)
        async with outside, contextlib.AsyncExitStack() as stack:
            spec.hosts_file = await confined._allow(stack, options, str(sockets), spec.forward)
            program = await asyncio.create_subprocess_exec(
                *sandbox.launch_argv(spec), cwd=work, env={"PATH": "/usr/bin:/bin"}, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
            out, err = await asyncio.wait_for(program.communicate(), 60)
        return out, err, spec.hosts_file and Path(spec.hosts_file).read_text()

    out, err, hosts = asyncio.run(go())
    assert out == b"hello from outside: ping\n", err
    assert hosts is not None and "::1 v6only.test" in hosts.splitlines()
