"""What the agents' sandbox adds to a trial of a ``cmd:`` agent (goal: ≤ 20 ms; docs/design/021).

The same program (tests/data/programs/notes_agent.py: Python start-up, one tool call, a reply) runs
TRIALS trials one at a time on the notes case, four ways, interleaved in rounds of five:

- ``bare``: started as before the sandbox (a plain child process, the old way: no PID 1, no namespaces);
- ``fallback``: under the fallback (``PASSHAT_SANDBOX=none``: a subreaper PID 1, caps dropped);
- ``ns-python``: the sandbox (user, mount, PID, network namespaces, the forwarded tool socket) with the
  Python PID 1 (``PASSHAT_SANDBOX_INIT=python``);
- ``ns-c``: the same with the C PID 1 (``PASSHAT_SANDBOX_INIT=c``), the default where it builds;
- ``ns-c-lifted``: ``ns-c`` with the bounds lifted (what the bounds' cgroups cost, side by side).

Every mode runs under the agents' default bounds (``--agent-processes`` and ``--agent-memory``: a pids
and a memory cgroup where passhat may make them, as root here; else rlimits), as a user's run does; the
bench prints how they were enforced. Prints the median agent time per trial of each, the added cost
(mode − bare) and the ratio. Run:
``python bench/bench_agent_sandbox.py [TRIALS]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "tests" / "data" / "programs" / "notes_agent.py"
NOTES = ROOT / "tests" / "data" / "notes"
BATCH = 5
BOUNDS: set[str] = set()
"""The agents' default bounds as the namespaces' records describe them (cgroups here, or rlimits)."""


def suite(folder: Path) -> Path:
    (folder / "cases").mkdir(parents=True)
    text = (NOTES / "cases" / "add-note.yaml").read_text().replace("../domain.py", str(NOTES / "domain.py"))
    (folder / "cases" / "add-note.yaml").write_text(text)
    return folder / "cases"


def run(mode: str, trials: int, where: Path) -> list[float]:
    from passhat.agents import command
    from passhat.agents.confined import Launch, agent_environment
    from passhat.cases import load_suite
    from passhat.llm.pricing import load_price_table
    from passhat.runner import RunConfig, RunStore, execute

    os.environ["PASSHAT_SANDBOX"] = "none" if mode == "fallback" else "auto"
    os.environ["PASSHAT_SANDBOX_INIT"] = "python" if mode == "ns-python" else "c" if mode.startswith("ns-c") else "auto"
    original = command.launch

    @contextlib.asynccontextmanager
    async def bare(argv: list[str], variables: Any, endpoint: Any, server: Any, options: Any) -> AsyncIterator[Launch]:
        yield Launch(argv, agent_environment(variables, (), tempfile.gettempdir(), tempfile.gettempdir()), os.getcwd(),
                     "none", "bare")

    command.launch = bare if mode == "bare" else original  # type: ignore[assignment]
    try:
        from passhat.agents import load_agent

        spec = f"cmd:{sys.executable} {PROGRAM} good"
        from passhat.agents.bounds import AgentBounds
        from passhat.agents.confined import AgentSandbox

        lifted = AgentSandbox(bounds=AgentBounds(processes=None, memory=None, file_size=None))
        agent = load_agent(spec, prices=load_price_table(None), **({"sandbox": lifted} if mode == "ns-c-lifted" else {}))
        out = where / f"run-{mode}"
        cfg = RunConfig(suite=load_suite(str(suite(where / mode))), agent=agent, agent_spec=spec, trials=trials,
                        out=out, concurrency=1)
        asyncio.run(execute(cfg))
        records = RunStore(out).load()
    finally:
        command.launch = original  # type: ignore[assignment]
    assert all(r.outcome == "pass" for r in records), [r.error for r in records]
    kinds = {r.isolation.kind for r in records if r.isolation}
    assert kinds == {"none" if mode == "bare" else "fallback" if mode == "fallback" else "namespaces"}, kinds
    wanted = {"ns-python": "Python PID 1", "ns-c": "C PID 1", "ns-c-lifted": "C PID 1"}.get(mode, "")
    assert all(wanted in r.isolation.details for r in records if r.isolation), "not the PID 1 asked for"
    BOUNDS.update(r.isolation.details.split("bounds: ", 1)[-1] for r in records if r.isolation and mode in ("ns-python", "ns-c"))
    return [r.timing.agent_s * 1000 for r in records]


def main() -> None:
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    from passhat import sandbox

    if sandbox.probe()[0] != "unshare":
        sys.exit(f"no namespaces here: {sandbox.probe()[1]}")
    with tempfile.TemporaryDirectory() as tmp:
        run("ns-c", 3, Path(tmp) / "warm")  # imports, the probe, the C PID 1's build, the tool server's first start
        # interleaved in rounds of BATCH trials, the order rotating, so a machine that gets busier or quieter
        # during the bench moves every mode alike (one mode after another measured the load, not the sandbox)
        modes = ["bare", "fallback", "ns-python", "ns-c", "ns-c-lifted"]
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        for round_ in range(-(-trials // BATCH)):
            for mode in modes[round_ % len(modes):] + modes[:round_ % len(modes)]:
                times[mode] += run(mode, min(BATCH, trials - round_ * BATCH), Path(tmp) / f"r{round_}")
        medians = {mode: statistics.median(times[mode]) for mode in modes}
    bare = medians["bare"]
    print(f"cmd: agent, {trials} trials each, median agent time per trial (one tool call):")
    for mode, ms in medians.items():
        print(f"  {mode:<12} {ms:7.1f} ms   added {ms - bare:+6.1f} ms   ratio {ms / bare:5.2f}×")
    print(f"the default bounds' own cost (ns-c − ns-c-lifted): {medians['ns-c'] - medians['ns-c-lifted']:+.1f} ms")
    print(f"default bounds, as enforced: {'; '.join(sorted(BOUNDS))}")
    for mode in ("ns-python", "ns-c"):
        added = medians[mode] - bare
        print(f"sandbox cost per trial, {mode}: {added:.1f} ms ({'within' if added <= 20 else 'over'} the 20 ms goal)")


if __name__ == "__main__":
    main()
