"""Keeps a throwaway PostgreSQL cluster alive exactly as long as the passhat process that started it.

Run by ``cluster.py`` as ``python -I -S _keeper.py ROOT USER POSTGRES_ARGS...`` with its stdin a pipe
from passhat; standard library only. It starts ``postgres`` in the foreground (as ``USER`` when run
as root), then waits for end-of-file on stdin. passhat never writes to the pipe: end-of-file comes
when passhat closes it or dies in any way, SIGKILL and the OOM killer included, since the kernel closes
a dead process's files. Then the keeper stops the cluster (fast shutdown, SIGKILL after 10 s) and
deletes ``ROOT`` (data folder, socket, log). ``postgres`` gets SIGKILL if the keeper itself is killed
(``PR_SET_PDEATHSIG``), so no server outlives both.
"""

from __future__ import annotations

import ctypes
import os
import pwd
import shutil
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _stop(*_: object) -> None:
    raise SystemExit(0)  # interrupts the blocking read (a handler that returns would let it resume)


def main() -> int:
    root, user, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in passhat's terminal: passhat decides, not us
    signal.signal(signal.SIGTERM, _stop)  # stop and clean up below
    as_user: dict[str, object] = {}
    if os.geteuid() == 0 and user:
        entry = pwd.getpwnam(user)
        as_user = {"user": entry.pw_uid, "group": entry.pw_gid, "extra_groups": []}
    with open(os.path.join(root, "postgres.log"), "ab") as log:
        server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=root,
                                  preexec_fn=_die_with_parent, **as_user)  # type: ignore[call-overload]
    try:
        while os.read(0, 4096):  # passhat never writes; b"" is end-of-file: passhat is gone or done
            pass
    except (OSError, SystemExit):
        pass
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGINT)  # fast shutdown: roll back, disconnect everyone, stop
            try:
                server.wait(10)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
