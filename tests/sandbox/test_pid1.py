"""What a confined program can rely on from its PID 1, under the C one and the Python one alike: its exit
status passed on, orphans reaped, no capabilities, forwarded addresses (IPv4 and IPv6, an allowed name in
``/etc/hosts``) and nothing else, and a set-up that fails before the program ever runs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from passhat import sandbox
from passhat.sandbox import Forward, Spec
from passhat.sandbox.bounds import Cgroups, _own_v1_paths
from tests.sandbox.pid1s import pid1

__all__ = ["pid1"]  # a fixture, used by name

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the sandbox is Linux's namespaces")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def spec_for(work: Path, script: str, *args: str, shell: str = "/bin/sh") -> Spec:
    return sandbox.base_spec([shell, "-c", script, "sh", *args], str(work), [str(work)])


def confined(spec: Spec) -> subprocess.CompletedProcess[str]:
    return subprocess.run(sandbox.launch_argv(spec), cwd=spec.writable[0], env={"PATH": "/usr/bin:/bin"}, text=True,
                          stdin=subprocess.DEVNULL, capture_output=True, timeout=60, check=False)


def test_the_programs_exit_status_is_the_sandboxs(work: Path, pid1: str) -> None:
    done = confined(spec_for(work, "echo out; echo err >&2; exit 3"))
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")
    assert confined(spec_for(work, "kill -9 $$")).returncode == 128 + 9  # as a shell reports a signal


def test_the_specs_rlimits_reach_the_program(work: Path, pid1: str) -> None:
    """File size, processes and data (what --agent-memory is without a cgroup), set in the child before exec."""
    show = ("import resource as r; "
            "print(*(r.getrlimit(getattr(r, n))[0] for n in ('RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_DATA')))")
    spec = sandbox.base_spec([sys.executable, "-I", "-S", "-c", show], str(work), [str(work)])
    spec.limits = {"fsize": 1 << 20, "nproc": 77, "data": 300 << 20}
    done = confined(spec)
    assert done.stdout.split() == [str(1 << 20), "77", str(300 << 20)], done.stderr


def test_orphans_are_reaped(work: Path, pid1: str) -> None:
    """A child the program leaves behind re-parents to PID 1, which must reap it (or it stays a zombie)."""
    script = """( sh -c 'echo $$ > orphan.pid' & )
while [ ! -s orphan.pid ]; do sleep 0.01; done
i=0; while [ -e /proc/$(cat orphan.pid) ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done
[ -e /proc/$(cat orphan.pid) ] && echo zombie || echo reaped"""
    done = confined(spec_for(work, script))
    assert done.stdout == "reaped\n", done.stderr


def test_the_program_has_no_capabilities_and_no_new_privileges(work: Path, pid1: str) -> None:
    done = confined(spec_for(work, "cat /proc/self/status"))
    status = dict(line.split(":\t", 1) for line in done.stdout.splitlines() if ":\t" in line)
    assert {k: int(status[k], 16) for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")} == dict.fromkeys(
        ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"), 0)
    assert status["NoNewPrivs"].strip() == "1"


@pytest.mark.skipif(not {"pids", "memory"} <= set(_own_v1_paths()), reason="no v1 pids and memory cgroups to write here")
def test_the_program_and_what_it_starts_are_in_the_specs_cgroups(work: Path, pid1: str) -> None:
    """PID 1 joins through ``tasks`` (the fast way, its one thread): the program and its children follow it."""
    cgroups = Cgroups.make(processes=64, memory_bytes=256 << 20)
    assert cgroups is not None
    spec = spec_for(work, "sh -c 'cat /proc/self/cgroup'")
    spec.cgroups = list(cgroups.folders.values())
    try:
        done = confined(spec)
    finally:
        cgroups.remove()
    joined = {line.split(":")[1]: line.split(":")[2] for line in done.stdout.splitlines()}
    for controller, folder in cgroups.folders.items():
        assert folder.endswith(joined[controller]), (controller, folder, done.stdout, done.stderr)
    assert not any(os.path.exists(folder) for folder in cgroups.folders.values())


@pytest.mark.parametrize("breaks", ["cwd", "cgroup", "hosts", "program"])
def test_a_set_up_that_fails_never_runs_the_program(work: Path, tmp_path: Path, pid1: str, breaks: str) -> None:
    spec = spec_for(work, f"touch {work}/ran")
    missing = str(tmp_path / "missing")
    expected = {"cwd": f"cannot enter {missing}", "cgroup": f"cannot join the cgroup {missing}",
                "hosts": "cannot bind /etc/hosts", "program": f"cannot run {missing}"}[breaks]
    if breaks == "cwd":
        spec.cwd = missing
    elif breaks == "cgroup":
        spec.cgroups = [missing]
    elif breaks == "hosts":
        spec.hosts_file = missing
    else:
        spec.argv = [missing]
    done = confined(spec)
    assert done.returncode == sandbox.SETUP_FAILED
    assert done.stderr == f"passhat sandbox: {expected}: No such file or directory\n"
    assert not (work / "ran").exists()


def test_a_spec_it_cannot_read_is_a_set_up_failure(work: Path, pid1: str) -> None:
    argv = sandbox.launch_argv(spec_for(work, f"touch {work}/ran"))
    mode = argv.index("namespaces")
    done = subprocess.run([*argv[:mode + 1], "bogus", *argv[mode + 1:]], capture_output=True, text=True, timeout=60,
                          check=False)
    assert (done.returncode, done.stderr) == (sandbox.SETUP_FAILED, "passhat sandbox: spec: unknown step bogus\n")
    assert not (work / "ran").exists()


@pytest.fixture
def echo_socket(tmp_path: Path) -> Iterator[Path]:
    """A folder with ``echo.sock``: a unix socket that sends back whatever it gets (the harness's side)."""
    folder = tmp_path / "sockets"
    folder.mkdir()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(folder / "echo.sock"))
    server.listen()

    def echo(connection: socket.socket) -> None:
        with connection:
            while data := connection.recv(65536):
                connection.sendall(data)

    def serve() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=echo, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield folder
    finally:
        server.shutdown(socket.SHUT_RDWR)
        server.close()


# bash's /dev/tcp: a connection without starting an interpreter; the big one checks that a relay with more
# in flight than its buffers (both ways at once) neither loses nor reorders a byte
CLIENT = """for target in 127.0.0.1/8080 ::1/8443 allowed.test/443; do
  exec 3<>/dev/tcp/$target && echo "ping $target" >&3 && read -r line <&3 && echo "$line"; exec 3<&-
done
(exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null || echo "9 refused"
"$1" -I -S -c '
import os, socket, threading
data = os.urandom(3 << 20)
c = socket.create_connection(("::1", 8443))
threading.Thread(target=lambda: (c.sendall(data), c.shutdown(socket.SHUT_WR))).start()
got = bytearray()
while chunk := c.recv(1 << 16):
    got += chunk
print("echoed", got == data)'
"""


@pytest.mark.skipif(not os.path.exists("/proc/net/if_inet6"), reason="no IPv6 in this kernel")
def test_forwarded_addresses_ipv4_and_ipv6_reach_their_socket_and_nothing_else(
        work: Path, echo_socket: Path, pid1: str) -> None:
    hosts = echo_socket / "hosts"
    hosts.write_text("127.0.0.1 localhost\n2001:db8::1 allowed.test\n")
    spec = spec_for(work, CLIENT, sys.executable, shell="/bin/bash")
    spec.sockets, spec.hosts_file = str(echo_socket), str(hosts)
    # 2001:db8::1 (documentation addresses): added to lo inside the namespace only
    spec.forward = [Forward("127.0.0.1", 8080, "echo.sock"), Forward("::1", 8443, "echo.sock"),
                    Forward("2001:db8::1", 443, "echo.sock")]
    done = confined(spec)
    assert done.stdout.splitlines() == ["ping 127.0.0.1/8080", "ping ::1/8443", "ping allowed.test/443", "9 refused",
                                        "echoed True"], done.stderr
    assert "20010db8000000000000000000000001" not in Path("/proc/net/if_inet6").read_text()  # not on this machine
