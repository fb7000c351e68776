"""``--agent cmd:"COMMAND ARGS"``: an agent that is a program, started once per trial.

The program gets the start message in its environment (``PASSHAT_START`` as JSON, and each field as
``PASSHAT_<FIELD>``: ``PASSHAT_TOOLS_URL``, ``PASSHAT_MCP_URL``, ``PASSHAT_TOKEN``, ``PASSHAT_INSTRUCTION`` …;
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` and ``..._HEADERS`` point an OpenTelemetry SDK at the trial's trace
receiver), works through the trial's tools, and prints its final reply on stdout: either plain text (all
of stdout), or a last line ``{"reply": "...", "usage": {...}}``. Logs belong on stderr, whose tail is kept
as evidence when the program fails.

The program runs in the agents' sandbox (:mod:`passhat.agents.confined`: its own namespaces, only its
trial's tools and the allowed hosts, only the variables the user names) and its own process group,
which is killed (SIGKILL) when the trial ends for any reason, so a hung program, one that spins the CPU
or leaves children behind — in a session of their own too — cannot outlive its trial. A non-zero
exit status, output that is not UTF-8 text, or more than ``MAX_STDOUT`` bytes of it fails the trial with
that reason — one that failed at a bound of its sandbox (processes, memory, file size) with that bound
named first; a program that cannot be started at all is an infrastructure error.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import shlex
import shutil
import signal
from typing import Any

from pydantic import ValidationError

from passhat.agents.confined import AgentSandbox, Launch, confinement_available, launch
from passhat.agents.external import ExternalAgent
from passhat.errors import AgentCrashed, InfrastructureError, PasshatError
from passhat.sandbox import SETUP_FAILED
from passhat.serve import AgentReply, TrialEndpoint, TrialStart
from passhat.serve.model_upstreams import base_url_variable
from passhat.shutdown import at_hard_exit

MAX_STDOUT = 1024 * 1024
"""Bytes of stdout accepted as a reply; more fails the trial (the rest is drained, not kept)."""
STDERR_TAIL = 4000
"""Characters of stderr kept as evidence."""
ENV_VALUE_LIMIT = 100_000
"""Longer values (a very long policy) are left out of the environment (Linux refuses one over 128 KiB);
the program can ``GET`` its ``PASSHAT_TRIAL_URL`` for the whole start message."""
DRAIN_AFTER_EXIT_S = 2.0
FALLBACK_STOP_S = 2.0
"""How long the fallback's subreaper gets to kill what the program left before its own group is killed."""
EXIT_POLL_S = 0.05


def is_command_spec(spec: str) -> bool:
    return spec.startswith("cmd:")


def parse_command(spec: str) -> list[str]:
    """``cmd:python my_agent.py --fast`` → argv; checks the program exists (bad input otherwise)."""
    text = spec.removeprefix("cmd:").strip()
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise PasshatError(f"--agent {spec!r}: cannot split the command line: {exc}") from None
    if not argv:
        raise PasshatError(f"--agent {spec!r}: no command after cmd:")
    if shutil.which(argv[0]) is None and not os.access(argv[0], os.X_OK):
        raise PasshatError(f"--agent {spec!r}: program {argv[0]!r} not found on PATH and not an executable file")
    return argv


def trial_variables(start: TrialStart) -> dict[str, str]:
    """This trial's variables: ``PASSHAT_<FIELD>`` per start-message field, ``PASSHAT_START``, OTLP's two, and
    with a model relay ``NAME_BASE_URL`` per provider (``OPENAI_BASE_URL``: the SDK itself goes through it)."""
    fields = start.model_dump(mode="json")
    env = {f"PASSHAT_{key.upper()}": str(value) for key, value in fields.items()
           if value is not None and key != "model_urls" and len(str(value)) <= ENV_VALUE_LIMIT}
    if start.model_urls:  # the model relay: where the provider's own SDK looks for its base URL
        env["PASSHAT_MODEL_URLS"] = json.dumps(start.model_urls)
        env.update({base_url_variable(name): url for name, url in start.model_urls.items()})
    whole = json.dumps(fields, ensure_ascii=False)
    if len(whole) > ENV_VALUE_LIMIT:
        whole = json.dumps({**fields, "policy": None, "instruction": None}, ensure_ascii=False)
    env["PASSHAT_START"] = whole
    env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = f"{start.otlp_url}/v1/traces"
    env["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = f"authorization=Bearer%20{start.token}"
    return env


def parse_stdout(raw: bytes) -> AgentReply:
    """The reply in a program's stdout (see module docstring); raises :class:`AgentCrashed` for garbage."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AgentCrashed(f"the command printed something that is not UTF-8 text (byte {exc.start}: "
                           f"{raw[exc.start:exc.start + 8]!r})") from None
    if "\x00" in text:
        raise AgentCrashed(f"the command printed binary data (a NUL byte at character {text.index(chr(0))})")
    lines = [line for line in text.splitlines() if line.strip()]
    last = lines[-1].strip() if lines else ""
    if last.startswith("{") and last.endswith("}"):
        try:
            data = json.loads(last)
        except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack: plain text
            data = None
        if isinstance(data, dict) and ("reply" in data or "usage" in data):
            try:
                return AgentReply.model_validate(data)
            except ValidationError as exc:
                first = exc.errors()[0]
                raise AgentCrashed(f"the command's last line looks like a reply but "
                                   f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}") from None
    return AgentReply(reply=text.strip() or None)


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Everything the stream gives, keeping at most ``limit`` bytes; (kept, overflowed)."""
    kept = bytearray()
    overflow = False
    while chunk := await stream.read(65536):
        if len(kept) + len(chunk) > limit:
            overflow = True
            kept.extend(chunk[: max(0, limit - len(kept))])
        else:
            kept.extend(chunk)
    return bytes(kept), overflow


async def _read_tail(stream: asyncio.StreamReader, keep: int) -> str:
    tail = bytearray()
    while chunk := await stream.read(65536):
        tail.extend(chunk)
        del tail[: max(0, len(tail) - 4 * keep)]
    return tail.decode("utf-8", "replace")[-keep:]


async def _exit_status(proc: asyncio.subprocess.Process) -> int:
    """The exit status, as soon as the program exits. ``proc.wait()`` alone also waits for its pipes to
    close, which a child it left behind can hold open for ever; the status itself is known at exit."""
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while not waiter.done() and proc.returncode is None:
            await asyncio.wait({waiter}, timeout=EXIT_POLL_S)
    finally:
        waiter.cancel()
    assert proc.returncode is not None
    return proc.returncode


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _status(code: int) -> str:
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


class CommandAgent(ExternalAgent):
    """Starts ``argv`` once per trial (see module docstring)."""

    kind = "cmd"

    def __init__(self, argv: list[str], *, sandbox: AgentSandbox | None = None,
                 extra_env: dict[str, str] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.argv = list(argv)
        self.sandbox = sandbox or AgentSandbox()
        confinement_available()  # probed before the first trial: a bad $PASSHAT_SANDBOX is bad input now
        self.extra_env = dict(extra_env or {})

    async def run(self, endpoint: TrialEndpoint) -> AgentReply:
        variables = {**trial_variables(endpoint.start()), **self.extra_env}
        argv = [shutil.which(self.argv[0]) or self.argv[0], *self.argv[1:]]  # the program, whatever PATH it gets
        async with launch(argv, variables, endpoint, self.server, self.sandbox) as how:
            endpoint.episode.isolation = how.isolation
            return await self._run(how)

    async def _run(self, how: Launch) -> AgentReply:
        try:
            proc = await asyncio.create_subprocess_exec(
                *how.argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, cwd=how.cwd,
                stderr=asyncio.subprocess.PIPE, env=how.env, start_new_session=True)
        except OSError as exc:
            raise InfrastructureError(f"cannot start agent command {self.argv[0]!r}: {exc.strerror or exc}") from exc
        assert proc.stdout is not None and proc.stderr is not None
        forget = at_hard_exit(functools.partial(_kill_group, proc.pid))  # passhat.shutdown's last resort
        out = asyncio.ensure_future(_read_capped(proc.stdout, MAX_STDOUT))
        err = asyncio.ensure_future(_read_tail(proc.stderr, STDERR_TAIL))
        try:
            code = await _exit_status(proc)
        finally:
            if how.kind == "fallback" and proc.returncode is None:  # its subreaper kills what the program started
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(_exit_status(proc)), FALLBACK_STOP_S)
            _kill_group(proc.pid)  # at the time limit, or children left behind after a normal exit
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await asyncio.shield(_exit_status(proc))
            # a pipe still held by an escaped grandchild must not keep the trial open
            done, pending = await asyncio.wait({out, err}, timeout=DRAIN_AFTER_EXIT_S)
            for task in pending:
                task.cancel()
            forget()
        stdout, overflow = out.result() if out in done else (b"", False)
        stderr = err.result() if err in done else ""
        evidence = f"; stderr: …{stderr.strip()[-STDERR_TAIL:]}" if stderr.strip() else ""
        if code == SETUP_FAILED and "passhat sandbox:" in stderr:
            raise InfrastructureError(f"the agent's sandbox could not be set up: {stderr.strip()[-STDERR_TAIL:]}")
        if code != 0:
            bound = how.exceeded(code, stderr)  # a fork bomb, a leak: say which bound, not only "status 137"
            raise AgentCrashed(f"{bound + '; ' if bound else ''}the agent command {_status(code)}{evidence}")
        if overflow:
            raise AgentCrashed(f"the agent command printed more than {MAX_STDOUT} bytes on stdout "
                               f"(the reply goes on stdout, logs on stderr){evidence}")
        return parse_stdout(stdout)

    def describe(self) -> dict[str, Any]:
        return {"kind": self.kind, "argv": self.argv, "sandbox": self.sandbox.describe()}


__all__ = ["CommandAgent", "trial_variables", "is_command_spec", "parse_command", "parse_stdout"]
