"""One test per exit code per command (the table in docs/cli.md), through the real command line."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from passhat.cli import main
from passhat.errors import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INCOMPLETE, EXIT_INCONCLUSIVE, EXIT_OK
from passhat.gate import EXIT_CODES
from passhat.runner import health
from passhat.testing.fake_models import FakeModelServer, FakeRequest, Turn

ROOT = Path(__file__).parents[2]
NOTES = ROOT / "tests" / "data" / "notes"
DOCS = ROOT / "docs" / "cli.md"
RUBRIC = {"criteria": [{"name": "clear", "question": "Does the reply name the note id?",
                        "levels": {1: "no id", 5: "gives the id"}}]}


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(main, [str(a) for a in args])


def quick_run(suite: Any, agent: str, out: Path, *extra: Any) -> list[Any]:
    return ["run", suite, "--agent", agent, "-k", "1", "--out", out, "-q", "--no-report", "--no-sanity", *extra]


@dataclass
class Workspace:
    """Run folders, gate files and inputs shared by the tests of this module (built once)."""

    root: Path
    careful: Path
    hasty: Path
    failed_case: str
    judged: list[Path]
    model_url: str
    traffic: Path
    """Refunds conversations of the careful agent (two cases, one with a lost refund response), as JSONL."""

    def gate(self, rules: str) -> Path:
        path = self.root / f"gate-{abs(hash(rules))}.yaml"
        path.write_text(f"name: t\nrules:\n{rules}")
        return path

    @property
    def gate_pass(self) -> Path:
        return self.gate("  - never_fails: {select: {tags: {scenario: permission}}}\n")  # careful passes, hasty fails

    @property
    def gate_inconclusive(self) -> Path:
        return self.gate("  - case_success_rate: {min: 0.95}\n")  # 19 of 19 cases: lower bound 0.05^(1/19) = 0.854 < 0.95

    def copy(self, run: Path, tmp: Path) -> Path:
        return Path(shutil.copytree(run, tmp / run.name))


def model_script(req: FakeRequest) -> Turn:
    """The notes agent adds a note and names it; the judge answers in a form it refuses (fails closed);
    the pairwise judge prefers the first reply."""
    if req.model == "pairwise-judge":
        return Turn(text=json.dumps({"evidence": "first", "preferred": "1"}))
    if req.model == "judge-model":
        return Turn(text="no verdict")
    return Turn(text="I added note N-1001. ###DONE###")


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("exit-codes")
    careful, hasty = root / "careful", root / "hasty"
    for agent, out in (("careful", careful), ("hasty", hasty)):
        r = invoke(*quick_run("reimbursement", agent, out))
        assert r.exit_code == 0, r.output
    failed = next(json.loads(line)["case_id"] for line in (hasty / "trials.jsonl").read_text().splitlines()
                  if json.loads(line)["outcome"] == "fail")
    case = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    (root / "judged").mkdir()
    (root / "judged" / "add-note.yaml").write_text(yaml.safe_dump({**case, "domain": str(NOTES / "domain.py"),
                                                                    "judge": RUBRIC}))
    with FakeModelServer(model_script) as server:
        judged = []
        for name in ("judged-a", "judged-b"):
            r = invoke(*quick_run(root / "judged", f"{NOTES / 'agents.py'}:good", root / name))
            assert r.exit_code == 0, r.output
            judged.append(root / name)
        yield Workspace(root, careful, hasty, failed, judged, server.openai_url, production_traffic(root))


def production_traffic(root: Path) -> Path:
    from passhat.api import evaluate
    from passhat.shadow.from_runs import write_conversations

    run = evaluate("refunds", "careful", trials=1, cases=["refund-4812", "refund-4812-drop-response"],
                   out=root / "production", sanity=False, on_warning=lambda _: None)
    write_conversations(run.folder, root / "traffic.jsonl")
    return root / "traffic.jsonl"


def shadow_args(traffic: Path, agent: str, out: Path) -> list[Any]:
    return ["shadow", traffic, "--agent", agent, "--domain", "refunds", "--out", out, "-q"]


def malformed_traffic(tmp: Path) -> Path:
    (tmp / "bad.jsonl").write_text('{"id": "c1", "turns": [{"role": "user"}]}\n')
    return tmp / "bad.jsonl"


def shadowed(w: Workspace, tmp: Path) -> Path:
    from passhat.shadow import shadow

    return shadow([w.traffic], "careful", domain="refunds", out=tmp / "shadow").folder


def notes_copy(tmp: Path) -> Path:
    """A copy of the notes suite (domain, fixture, cases) that a test may edit; returns its cases folder."""
    shutil.copytree(NOTES, tmp / "notes", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp / "notes" / "cases"


def labels_and_judgments(tmp: Path, label: str = "fail") -> list[Any]:
    (tmp / "labels.csv").write_text(f"case_id,trial,label\nc1,0,pass\nc2,0,{label}\n")
    (tmp / "j.jsonl").write_text('{"case_id": "c1", "trial": 0, "passed": true}\n{"case_id": "c2", "trial": 0, '
                                 '"passed": false}\n')
    return ["calibrate", "--labels", tmp / "labels.csv", "--judgments", tmp / "j.jsonl"]


def frozen(tmp: Path) -> tuple[Path, Path]:
    cases = notes_copy(tmp)
    r = invoke("suite", "freeze", cases, "--out", tmp / "snap.json")
    assert r.exit_code == 0, r.output
    return cases, tmp / "snap.json"


def edited(tmp: Path) -> list[Any]:
    cases, snap = frozen(tmp)
    case = cases / "add-note.yaml"
    case.write_text(case.read_text().replace("call mom", "call dad"))
    return ["suite", "verify", cases, "--frozen", snap]


def infrastructure_agent(tmp: Path) -> str:
    (tmp / "down.py").write_text("from passhat.errors import InfrastructureError\n\n"
                                 "async def agent(episode):\n    raise InfrastructureError('provider down (503)')\n")
    return f"{tmp / 'down.py'}:agent"


def unfinished_suite(tmp: Path) -> Path:
    (tmp / "req.jsonl").write_text('{"text": "Refund my order."}\n')
    assert invoke("cases", "import", tmp / "req.jsonl", "--domain", "refunds", "--out", tmp / "imported").exit_code == 0
    return tmp / "imported"


def judge_args(ws: Workspace, model: str) -> list[Any]:
    return ["--judge", f"openai:{model}", "--base-url", ws.model_url, "--retries", "1"]


def canary_files(tmp: Path, candidate_successes: int, n: int = 400, bad: bool = False) -> list[Any]:
    """Baseline: 360 of 400 succeed; candidate: ``candidate_successes`` of ``n``; ``bad``: a line without latency."""
    def lines(version: str, successes: int, n: int) -> str:
        return "".join(json.dumps({"version": version, "outcome": "success" if i < successes else "handoff",
                                   "latency_s": 1.0 + i % 7}) + "\n" for i in range(n))

    (tmp / "b.jsonl").write_text(lines("v1", 360, 400))
    (tmp / "c.jsonl").write_text(lines("v2", candidate_successes, n) + ('{"version": "v2", "outcome": "success"}\n'
                                                                        if bad else ""))
    return ["canary", tmp / "b.jsonl", tmp / "c.jsonl", "--resamples", 200]


Args = Callable[[Workspace, Path], list[Any]]
CASES: dict[tuple[str, int], Args] = {
    ("run", 0): lambda w, t: quick_run("reimbursement", "careful", t / "r"),
    ("run", 1): lambda w, t: quick_run("reimbursement", "hasty", t / "r", "--gate", w.gate_pass),
    ("run", 2): lambda w, t: quick_run("reimbursement", "no_such_module_anywhere:agent", t / "r"),
    ("run", 3): lambda w, t: quick_run("reimbursement", "careful", t / "r", "--gate", w.gate_inconclusive),
    ("run", 4): lambda w, t: quick_run(NOTES / "cases", infrastructure_agent(t), t / "r"),
    ("show", 0): lambda w, t: ["show", w.careful],
    ("show", 2): lambda w, t: ["show", t],
    ("compare", 0): lambda w, t: ["compare", w.careful, w.hasty, "-q"],
    ("compare", 2): lambda w, t: ["compare", w.careful, t],
    ("gate", 0): lambda w, t: ["gate", w.copy(w.careful, t), "--gate", w.gate_pass],
    ("gate", 1): lambda w, t: ["gate", w.copy(w.hasty, t), "--gate", w.gate_pass],
    ("gate", 2): lambda w, t: ["gate", w.copy(w.careful, t), "--gate", w.gate("  - pass_hat_k: {k: 1, min: 2}\n")],
    ("gate", 3): lambda w, t: ["gate", w.copy(w.careful, t), "--gate", w.gate_inconclusive],
    ("canary", 0): lambda w, t: canary_files(t, 3990, n=4000),  # 99.75 %: no drop is ruled out from above
    ("canary", 1): lambda w, t: canary_files(t, 2800, n=4000),  # 70 %: far below 90 % − 2 points
    ("canary", 2): lambda w, t: canary_files(t, 360, bad=True),
    ("canary", 3): lambda w, t: canary_files(t, 360),  # the same rate, too few records to rule out 2 points
    ("shadow run", 0): lambda w, t: shadow_args(w.traffic, "careful", t / "s"),
    ("shadow run", 1): lambda w, t: shadow_args(w.traffic, "hasty", t / "s"),  # duplicate refund, other replies
    ("shadow run", 2): lambda w, t: shadow_args(malformed_traffic(t), "careful", t / "s"),
    ("shadow run", 4): lambda w, t: shadow_args(w.traffic, infrastructure_agent(t), t / "s"),
    ("shadow promote", 0): lambda w, t: ["shadow", "promote", shadowed(w, t), "refund-4812-t0", "--to", t / "cases"],
    ("shadow promote", 2): lambda w, t: ["shadow", "promote", t, "refund-4812-t0", "--to", t / "cases"],
    ("shadow schema", 0): lambda w, t: ["shadow", "schema"],
    ("report", 0): lambda w, t: ["report", w.copy(w.careful, t)],
    ("report", 2): lambda w, t: ["report", t],
    ("view", 2): lambda w, t: ["view", t / "missing"],
    ("export-otlp", 2): lambda w, t: ["export-otlp", w.careful, "--endpoint", "http://127.0.0.1:9", "--timeout", "0.5"],
    ("calibrate", 0): lambda w, t: labels_and_judgments(t),
    ("calibrate", 1): lambda w, t: [*labels_and_judgments(t), "--min-items", "5"],
    ("calibrate", 2): lambda w, t: labels_and_judgments(t, label="maybe"),
    ("judge", 0): lambda w, t: ["judge", w.judged[0], *judge_args(w, "judge-model"), "--out", t / "j.jsonl"],
    ("judge", 2): lambda w, t: ["judge", w.careful, *judge_args(w, "judge-model"), "--out", t / "j.jsonl"],
    ("pairwise", 0): lambda w, t: ["pairwise", *w.judged, *judge_args(w, "pairwise-judge"), "--out", t / "p.jsonl"],
    ("pairwise", 2): lambda w, t: ["pairwise", w.careful, w.hasty, *judge_args(w, "pairwise-judge"), "--out", t / "p.jsonl"],
    ("regrade", 0): lambda w, t: ["regrade", w.careful, "--out", t / "rg", "-q"],
    ("regrade", 2): lambda w, t: ["regrade", t, "--out", t / "rg"],
    ("init", 0): lambda w, t: ["init", t / "s"],
    ("init", 2): lambda w, t: (t / "README.md").write_text("mine") and ["init", t],  # would overwrite a file
    ("cases lint", 0): lambda w, t: ["cases", "lint", "reimbursement"],
    ("cases lint", 1): lambda w, t: ["cases", "lint", unfinished_suite(t)],
    ("cases lint", 2): lambda w, t: ["cases", "lint", "x[/y]"],
    ("cases import", 0): lambda w, t: (t / "r.jsonl").write_text('{"text": "hi"}\n') and
    ["cases", "import", t / "r.jsonl", "--domain", "refunds", "--out", t / "o"],
    ("cases import", 2): lambda w, t: (t / "r.jsonl").write_text('{"text": "hi"}\n') and
    ["cases", "import", t / "r.jsonl", "--domain", "no_such_domain_x", "--out", t / "o"],
    ("cases from-failure", 0): lambda w, t: ["cases", "from-failure", w.hasty, w.failed_case, 0, "--out", t / "c.yaml"],
    ("cases from-failure", 2): lambda w, t: ["cases", "from-failure", w.careful, "no-such-case", 0, "--out", t / "c.yaml"],
    ("cases expected", 0): lambda w, t: ["cases", "expected", "reimbursement", "inv-102"],
    ("cases expected", 2): lambda w, t: ["cases", "expected", "reimbursement", "inv-104-en"],
    ("cases reference", 0): lambda w, t: ["cases", "reference"],
    ("cases schema", 0): lambda w, t: ["cases", "schema"],
    ("suite hash", 0): lambda w, t: ["suite", "hash", "refunds"],
    ("suite hash", 2): lambda w, t: ["suite", "hash", t],
    ("suite freeze", 0): lambda w, t: ["suite", "freeze", "refunds", "--out", t / "snap.json"],
    ("suite freeze", 2): lambda w, t: ["suite", "freeze", t, "--out", t / "snap.json"],
    ("suite verify", 0): lambda w, t: ["suite", "verify", *(lambda c, s: [c, "--frozen", s])(*frozen(t))],
    ("suite verify", 1): lambda w, t: edited(t),
    ("suite verify", 2): lambda w, t: ["suite", "verify", t, "--frozen", frozen(t)[1]],
    ("suite diff", 0): lambda w, t: ["suite", "diff", w.careful, w.hasty],
    ("suite diff", 2): lambda w, t: ["suite", "diff", w.careful, t / "nothing"],
    ("agents protocol", 0): lambda w, t: ["agents", "protocol"],
    ("agents schema", 0): lambda w, t: ["agents", "schema"],
}


@pytest.mark.parametrize(("command", "code"), list(CASES), ids=[f"{c.replace(' ', '-')}-{n}" for c, n in CASES])
def test_exit_code(ws: Workspace, tmp_path: Path, command: str, code: int) -> None:
    args = CASES[command, code](ws, tmp_path)
    r = invoke(*args)
    assert r.exit_code == code, r.output
    if code == EXIT_BAD_INPUT:  # one line, naming what is wrong; no traceback
        assert "Traceback" not in r.output and r.output.count("error: ") == 1, r.output
        assert any(line.startswith("error: ") for line in r.output.splitlines())


def test_view_exits_0_when_stopped_with_ctrl_c(ws: Workspace) -> None:
    # Ctrl-C as a terminal delivers it: a test run started in the background by a shell without job control
    # (`(pytest &)`) inherits SIGINT ignored, and so would this child, which then rightly keeps ignoring it
    argv = [sys.executable, "-c", "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from passhat.cli import main; sys.argv[0] = 'passhat'; main()", "view", str(ws.root), "--port", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = re.search(r"http://\S+/", proc.stdout.readline())
        assert url is not None
        with urllib.request.urlopen(url.group(0), timeout=30) as page:  # serving: Ctrl-C now stops the server
            assert page.status == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == EXIT_OK
    finally:
        proc.kill()
        proc.wait()


def test_export_otlp_exits_0_when_every_trace_is_accepted(ws: Workspace) -> None:
    class Accept(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Accept)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        r = invoke("export-otlp", ws.careful, "--endpoint", f"http://127.0.0.1:{server.server_address[1]}")
        assert r.exit_code == EXIT_OK, r.output
    finally:
        server.shutdown()
        server.server_close()


COVERED_ELSEWHERE = {("view", 0): test_view_exits_0_when_stopped_with_ctrl_c,
                     ("export-otlp", 0): test_export_otlp_exits_0_when_every_trace_is_accepted}


def documented() -> dict[tuple[str, int], str]:
    """(command, code) → meaning, from the per-command table in docs/cli.md."""
    cells: dict[tuple[str, int], str] = {}
    for line in DOCS.read_text("utf-8").splitlines():
        m = re.match(r"\| `([a-z -]+)` \|(.*)\|$", line)
        if m:
            for code, text in zip((0, 1, 2, 3, 4), m.group(2).split("|"), strict=True):
                if text.strip():
                    cells[m.group(1), code] = text.strip()
    return cells


def test_the_documented_table_is_the_tested_one() -> None:
    assert set(documented()) == set(CASES) | set(COVERED_ELSEWHERE)
    every_command = {" ".join(p) for p in commands(main)}
    assert {command for command, _ in documented()} == every_command


def commands(group: Any, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    import click

    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))
        else:
            yield (*prefix, name)


def test_the_codes_are_the_ones_the_gate_and_the_runner_use() -> None:
    assert EXIT_CODES == {"PASS": EXIT_OK, "FAIL": EXIT_FAILED, "INCONCLUSIVE": EXIT_INCONCLUSIVE}
    assert health.EXIT_INCOMPLETE == EXIT_INCOMPLETE
