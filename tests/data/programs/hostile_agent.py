"""A hostile agent: does its task, then tries every escape an audit found, and reports what it got.

Run as a ``cmd:`` agent (``python hostile_agent.py``), as an ``--isolate process`` agent
(``hostile_agent.py:agent``) or as a workspace command (``python hostile_agent.py --command``). The test
gives it, in ``$HOSTILE_CONFIG`` (JSON), what it could have learnt: the harness's pid, the run folder, a
sibling copy (a folder the test made in its own tmp_path), a port nobody allowed, a mailbox where
concurrent trials swap their tool URLs and tokens, a marker for the children it leaves, and the name of
the secret the harness holds in its environment. Every answer is ``blocked: ...`` or ``ESCAPED: ...``.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request


def _tried(fn):
    try:
        found = fn()
    except Exception as exc:  # noqa: BLE001 - whatever stopped it is the answer
        return f"blocked: {type(exc).__name__}: {exc}"[:300]
    return f"ESCAPED: {found}"[:300] if found else "blocked: nothing to find"


def _pids(config):
    return sorted({os.getppid(), config["harness_pid"]})


def read_memory(config):
    for pid in _pids(config):
        with open(f"/proc/{pid}/maps") as maps:
            region = next(line for line in maps if " rw-p " in line)
        start = int(region.split("-")[0], 16)
        with open(f"/proc/{pid}/mem", "rb") as mem:
            mem.seek(start)
            if mem.read(64):
                return f"read the memory of pid {pid}"
    return None


def read_environ(config):
    if config["secret"] in os.environ:
        return "the harness's secret is in my own environment"
    for pid in _pids(config):
        with open(f"/proc/{pid}/environ", "rb") as f:
            if f"{config['secret']}=".encode() in f.read():
                return f"read the secret from /proc/{pid}/environ"
    return None


def list_descriptors(config):
    for pid in _pids(config):
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        if any(config["run_folder"] in link for link in links):
            return f"found the run folder among the descriptors of pid {pid}"
    return None


def open_run_folder(config):
    names = os.listdir(config["run_folder"])
    return f"listed the run folder: {names}" if names else None


def write_sibling(config):
    with open(os.path.join(config["sibling"], f"planted-{os.getpid()}.txt"), "w") as f:
        f.write("another trial's work")
    return "wrote into the sibling copy"


def connect_closed_port(config):
    with socket.create_connection(("127.0.0.1", config["closed_port"]), timeout=2):
        return f"connected to 127.0.0.1:{config['closed_port']}"


def other_trial(config, start):
    mailbox = config["mailbox"]
    me = {"tools_url": start["tools_url"], "token": start["token"]}
    urllib.request.urlopen(urllib.request.Request(f"{mailbox}/put", data=json.dumps(me).encode()), timeout=3).read()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        others = [o for o in json.loads(urllib.request.urlopen(f"{mailbox}/all", timeout=3).read()) if o != me]
        if others:
            other = others[0]
            request = urllib.request.Request(f"{other['tools_url']}/add_note", method="POST",
                                             data=json.dumps({"title": "planted", "priority": 1}).encode(),
                                             headers={"authorization": f"Bearer {other['token']}",
                                                      "content-type": "application/json"})
            with urllib.request.urlopen(request, timeout=3) as answer:
                return f"wrote through another trial's endpoint: HTTP {answer.status}"
        time.sleep(0.1)
    return None


def leave_child(config):
    # its own session (start_new_session), deaf to SIGTERM, and double-forked: its parent exits at once
    child = "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\nif os.fork() == 0: time.sleep(60)"
    subprocess.Popen([sys.executable, "-c", child, config["marker"]], start_new_session=True,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return None  # the test looks for the marker once the run is over


def attempts(config, start=None):
    found = {
        "memory": _tried(lambda: read_memory(config)),
        "environ": _tried(lambda: read_environ(config)),
        "descriptors": _tried(lambda: list_descriptors(config)),
        "run_folder": _tried(lambda: open_run_folder(config)),
        "sibling": _tried(lambda: write_sibling(config)),
        "closed_port": _tried(lambda: connect_closed_port(config)),
        "child": _tried(lambda: leave_child(config)),
    }
    if start is not None:
        found["other_trial"] = _tried(lambda: other_trial(config, start))
    return found


def _call(start, name, arguments):
    request = urllib.request.Request(f"{start['tools_url']}/{name}", data=json.dumps(arguments).encode(), method="POST",
                                     headers={"authorization": f"Bearer {start['token']}",
                                              "content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as response:
        return json.loads(response.read())


async def agent(episode):
    """The ``--isolate process`` form: the same attempts, from a worker."""
    import asyncio

    await episode.call("add_note", {"title": "call mom", "priority": 2})
    start = json.loads(os.environ["PASSHAT_START"])
    return "added the note; " + json.dumps(await asyncio.to_thread(attempts, json.loads(os.environ["HOSTILE_CONFIG"]), start))


def main():
    config = json.loads(os.environ["HOSTILE_CONFIG"])
    if sys.argv[1:] == ["--command"]:
        print(json.dumps(attempts(config)))
        return
    start = json.loads(os.environ["PASSHAT_START"])
    _call(start, "add_note", {"title": "call mom", "priority": 2})
    print(json.dumps({"reply": "added the note; " + json.dumps(attempts(config, start))}))


if __name__ == "__main__":
    main()
