"""A throwaway PostgreSQL cluster that passhat starts itself, for runs given no server (``--pg-url``).

``initdb`` into a private folder (:func:`cluster_parent`: in RAM where ``/dev/shm`` has room, else the
temporary folder; ``PASSHAT_PG_DIR`` chooses), then ``postgres`` on a Unix socket in that folder (no TCP),
with durability off (``fsync``, ``synchronous_commit``, ``full_page_writes``): nothing here must survive
a crash, and cloning a template is several times faster without the flushes. In RAM, because a trial's
database is ~300 files made and deleted: on ext4 without a journal (common on CI machines) a new inode is
found only after skipping every recently deleted one, which made each ``CREATE DATABASE`` cost 130-215 ms
of CPU, against 11 ms on tmpfs (measured, 20 clones of a 7 MB template). Logins need a password
(SCRAM): the superuser's is random and stays in this process; each trial gets a role of its own.

PostgreSQL refuses to run as root, and CI runs as root, so then the cluster runs as an unprivileged
user (``PASSHAT_PG_USER``, else ``postgres`` if it exists, else ``nobody``) who owns the folder (mode
0700). passhat, still root, reaches the socket anyway (root passes file permissions), and so do the
servers it starts. The cluster lives as long as this process: ``_keeper.py`` stops it and deletes the
folder when this process ends, however it ends.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from passhat.errors import PasshatError
from passhat.sandbox.bounds import pid_alive as _alive
from passhat.worlds.ram import RAM, ram_with_room

INSTALL_HINT = ("install PostgreSQL's server binaries (Debian/Ubuntu: `apt-get install postgresql`; macOS: "
                "`brew install postgresql`), or give a server with --pg-url / PASSHAT_PG_URL")
ADMIN = "passhat"
"""The superuser of a throwaway cluster."""
START_SECONDS = 60.0
DIR_ENV = "PASSHAT_PG_DIR"
"""Environment variable: the folder a throwaway cluster's own folder is made in."""
RAM_MIN_FREE = 2 << 30
"""Free space ``/dev/shm`` must have for the cluster to go there by default."""
SETTINGS = {
    "listen_addresses": "", "fsync": "off", "synchronous_commit": "off", "full_page_writes": "off",
    "max_connections": "400", "shared_buffers": "64MB", "max_locks_per_transaction": "256",
    "log_min_messages": "warning", "timezone": "UTC", "password_encryption": "scram-sha-256",
}
"""The cluster is a scratch area: durability off, room for -j 32 trials with a server and two harness
connections each, UTC so timestamps read the same on every machine."""


class PostgresUnavailable(PasshatError):
    """No PostgreSQL server was given and none can be started here."""


def find_bin_dir() -> Path | None:
    """The folder of ``initdb`` and ``postgres``: ``PASSHAT_PG_BIN``, ``PATH``, then the newest
    ``/usr/lib/postgresql/*/bin`` (Debian installs them there, off ``PATH``)."""
    chosen = os.environ.get("PASSHAT_PG_BIN")
    candidates = [Path(chosen)] if chosen else []
    found = shutil.which("initdb")
    if found:
        candidates.append(Path(found).resolve().parent)
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: _version(p), reverse=True)
    candidates += [Path(p) for p in versions]
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    if chosen:
        raise PostgresUnavailable(f"PASSHAT_PG_BIN={chosen}: no initdb and postgres there; {INSTALL_HINT}")
    return None


def client_tool(name: str) -> str:
    """``pg_restore`` or ``psql`` (to load a dump): beside the server binaries, or on ``PATH``."""
    folder = find_bin_dir()
    if folder is not None and (folder / name).is_file():
        return str(folder / name)
    found = shutil.which(name)
    if found is None:
        raise PostgresUnavailable(f"{name} is needed to load a pg_dump fixture and was not found; {INSTALL_HINT}")
    return found


def _version(path: str) -> int:
    try:
        return int(Path(path).parent.name.split(".")[0])
    except ValueError:
        return 0


def _run_as() -> str:
    """The unprivileged user a cluster started by root runs as ('' when not root: as ourselves)."""
    if os.geteuid() != 0:
        return ""
    for name in filter(None, (os.environ.get("PASSHAT_PG_USER"), "postgres", "nobody")):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise PostgresUnavailable("running as root, and no unprivileged user to run PostgreSQL as "
                              "(set PASSHAT_PG_USER to one)")


@dataclass
class Cluster:
    """A running throwaway cluster: where its socket is and how its superuser logs in."""

    root: Path
    socket_dir: Path
    port: int
    password: str
    keeper: subprocess.Popen[bytes]

    def stop(self) -> None:
        """Stop the cluster and delete its folder (the keeper does both when its pipe closes)."""
        if self.keeper.stdin is not None and not self.keeper.stdin.closed:
            self.keeper.stdin.close()
        try:
            self.keeper.wait(30)
        except subprocess.TimeoutExpired:
            self.keeper.kill()


def start_cluster() -> Cluster:
    """``initdb`` and start a private cluster; :class:`PostgresUnavailable` says what to install if it cannot."""
    bin_dir = find_bin_dir()
    if bin_dir is None:
        raise PostgresUnavailable(f"no PostgreSQL server was given and none is installed here; {INSTALL_HINT}")
    remove_stale()
    user = _run_as()
    parent = cluster_parent()
    try:
        root = Path(tempfile.mkdtemp(prefix="passhat-pg-", dir=parent))
    except OSError as exc:
        raise PostgresUnavailable(f"cannot make the throwaway cluster's folder in {parent} ({DIR_ENV} chooses "
                                  f"where): {exc.strerror}") from exc
    data, sock = root / "data", root / "s"
    password = secrets.token_hex(16)
    try:
        sock.mkdir(mode=0o700)
        pwfile = root / "pw"
        pwfile.write_text(password + "\n")
        if user:
            entry = pwd.getpwnam(user)
            for path in (root, sock, pwfile):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        as_user = ({"user": pwd.getpwnam(user).pw_uid, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []}
                   if user else {})
        init = subprocess.run(
            [str(bin_dir / "initdb"), "-D", str(data), "-U", ADMIN, "--auth=scram-sha-256", f"--pwfile={pwfile}",
             "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"],
            capture_output=True, text=True, cwd=root, **as_user)  # type: ignore[call-overload]
        pwfile.unlink()
        if init.returncode != 0:
            raise PostgresUnavailable(f"initdb failed ({bin_dir / 'initdb'}): {init.stderr.strip()[-800:]}")
        port = 5432
        args = [str(bin_dir / "postgres"), "-D", str(data), "-k", str(sock), "-p", str(port)]
        for key, value in SETTINGS.items():
            args += ["-c", f"{key}={value}"]
        keeper = subprocess.Popen([sys.executable, "-I", "-S", str(Path(__file__).with_name("_keeper.py")),
                                   str(root), user, *args],
                                  stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True)  # not in our process group: a group kill spares it
        (root / "keeper.pid").write_text(str(keeper.pid))
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    cluster = Cluster(root, sock, port, password, keeper)
    _wait_ready(cluster)
    return cluster


def _wait_ready(cluster: Cluster) -> None:
    socket_file = cluster.socket_dir / f".s.PGSQL.{cluster.port}"
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if cluster.keeper.poll() is not None:
            break
        if socket_file.exists() and (cluster.socket_dir / f".s.PGSQL.{cluster.port}.lock").exists():
            try:
                import psycopg

                psycopg.connect(host=str(cluster.socket_dir), port=cluster.port, user=ADMIN,
                                password=cluster.password, dbname="postgres", connect_timeout=5).close()
                return
            except psycopg.OperationalError:
                pass  # still starting up
        time.sleep(0.05)
    log = _tail(cluster.root / "postgres.log")
    cluster.stop()
    raise PostgresUnavailable(f"the throwaway PostgreSQL cluster did not start within {START_SECONDS:g}s: {log}")


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()[-800:] or "(no log)"
    except OSError:
        return "(no log)"


def cluster_parent() -> str:
    """Where a throwaway cluster's folder is made: ``PASSHAT_PG_DIR``; else ``/dev/shm`` when it is a tmpfs
    with 2 GiB free (a clone of a fixture takes its size in RAM there, for as long as its trial); else the
    temporary folder."""
    chosen = os.environ.get(DIR_ENV, "").strip()
    if chosen:
        return chosen
    ram = ram_with_room(RAM_MIN_FREE)
    return str(ram) if ram is not None else tempfile.gettempdir()


def remove_stale() -> None:
    """Delete folders of throwaway clusters whose keeper is gone (killed outright: it could not clean up)."""
    parents = dict.fromkeys([tempfile.gettempdir(), str(RAM), os.environ.get(DIR_ENV, "").strip() or tempfile.gettempdir()])
    for folder in [f for parent in parents for f in glob.glob(os.path.join(parent, "passhat-pg-*"))]:
        try:
            pid = int((Path(folder) / "keeper.pid").read_text())
        except (OSError, ValueError):
            if _age_s(folder) > 3600:  # a set-up that died before it started its keeper
                shutil.rmtree(folder, ignore_errors=True)
            continue  # else being set up right now
        if not _alive(pid):
            shutil.rmtree(folder, ignore_errors=True)


def _age_s(folder: str) -> float:
    try:
        return time.time() - os.stat(folder).st_mtime
    except OSError:
        return 0.0

