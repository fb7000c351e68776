"""Suite hashes, frozen snapshots, and naming exactly which cases changed."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from passhat.cases import load_suite
from passhat.cli import main
from passhat.models import Manifest
from passhat.suites import changed_cases, freeze
from passhat.suites.changes import describe_changes
from passhat.suites.snapshot import snapshot_suite
from tests.suites.helpers import AGENTS, NOTES


def cli(*args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, list(args))
    return r.exit_code, r.output


def copy_suite(split_suite: Path, tmp_path: Path) -> Path:
    """The split suite with its own copy of the notes domain, so fixtures can be edited."""
    root = tmp_path / "copy"
    shutil.copytree(NOTES, root / "notes", ignore=shutil.ignore_patterns("cases", "__pycache__"))
    shutil.copytree(split_suite, root / "cases")
    for f in (root / "cases").glob("*.yaml"):
        f.write_text(f.read_text().replace(str(NOTES / "domain.py"), "../notes/domain.py"))
    return root / "cases"


def test_suite_hash_shows_per_case_hashes(split_suite: Path) -> None:
    code, output = cli("suite", "hash", str(split_suite), "--json")
    assert code == 0, output
    block = json.loads(output)
    suite = load_suite(str(split_suite))
    assert block["hash"] == suite.content_hash()
    assert block["cases"] == suite.case_hashes()
    assert set(block["fixtures"][str(NOTES / "domain.py")]) == {"default"}
    code, output = cli("suite", "hash", str(split_suite))
    assert code == 0 and "add-holdout" in output and suite.case_hashes()["add-holdout"][:16] in output


def test_frozen_run_refuses_a_changed_suite_naming_the_cases(split_suite: Path, tmp_path: Path) -> None:
    cases = copy_suite(split_suite, tmp_path)
    snap = tmp_path / "snap.json"
    code, output = cli("suite", "freeze", str(cases), "--out", str(snap))
    assert code == 0, output
    data = json.loads(snap.read_text())
    assert data["format"] == "passhat-suite-snapshot/1" and data["passhat_version"]
    assert set(data["suite"]["cases"]) == {"add-dev", "fault-dev", "add-holdout", "fault-holdout"}
    assert set(data["suite"]["domains"]) == {"../notes/domain.py"}

    out = tmp_path / "ok"
    code, output = cli("run", str(cases), "--agent", f"{AGENTS}:good", "-k", "1", "--frozen", str(snap),
                       "--out", str(out), "-q", "--no-report", "--no-sanity")
    assert code == 0, output
    frozen = json.loads((out / "manifest.json").read_text())["frozen"]
    assert frozen["hash"] == data["suite"]["hash"] and len(frozen["sha256"]) == 64

    edited = cases / "fault-dev.yaml"
    edited.write_text(edited.read_text().replace("medium priority", "high priority"))
    (cases / "add-dev.yaml").unlink()
    code, output = cli("run", str(cases), "--agent", f"{AGENTS}:good", "--frozen", str(snap), "--out",
                       str(tmp_path / "refused"), "-q")
    assert code == 2
    [line] = output.splitlines()
    assert line.startswith("error: ") and "1 case(s) changed: fault-dev" in line and "1 case(s) removed: add-dev" in line
    assert not (tmp_path / "refused").exists()

    fixture = cases.parent / "notes" / "fixture.yaml"
    fixture.write_text(fixture.read_text().replace("groceries", "groceries and eggs"))
    code, output = cli("suite", "verify", str(cases), "--frozen", str(snap))
    assert code == 1
    [line] = output.splitlines()
    assert line.startswith("differs: ") and "domain '../notes/domain.py' changed (fixtures: default)" in line


def test_changed_cases_between_manifests_and_snapshots(split_suite: Path, tmp_path: Path) -> None:
    cases = copy_suite(split_suite, tmp_path)
    before = snapshot_suite(freeze(load_suite(str(cases))))
    assert changed_cases(before, before).unchanged == ["add-dev", "add-holdout", "fault-dev", "fault-holdout"]
    edited = cases / "add-holdout.yaml"
    edited.write_text(edited.read_text().replace("priority two", "priority 2"))
    after = snapshot_suite(freeze(load_suite(str(cases))))
    result = changed_cases(before, after)
    assert result.changed == ["add-holdout"] and not result.added and not result.removed
    assert result.reasons == {"add-holdout": "case content changed"}
    assert not result.same_suite and result.domains_changed == []

    # a run manifest works the same way, and a domain change affects every unchanged case of that domain
    out = tmp_path / "run"
    code, output = cli("run", str(cases), "--agent", f"{AGENTS}:good", "-k", "1", "--out", str(out), "-q",
                       "--no-report", "--no-sanity")
    assert code == 0, output
    manifest = Manifest.of_run(out).suite
    assert changed_cases(after, manifest).unchanged == list(after.cases)
    policy = cases.parent / "notes" / "domain.py"
    policy.write_text(policy.read_text().replace("Never wipe the audit log.", "Never, ever wipe the audit log."))
    later = snapshot_suite(freeze(load_suite(str(cases))))
    result = changed_cases(manifest, later)
    assert result.domains_changed == ["../notes/domain.py"] and result.changed == []
    assert set(result.affected_by_domain) == {"add-dev", "fault-dev", "add-holdout", "fault-holdout"}
    assert "affecting 4 unchanged case(s)" in describe_changes(result)
    code, output = cli("suite", "diff", str(out), str(cases))
    assert code == 0 and "domain '../notes/domain.py' changed" in output


def test_a_run_s_manifest_holds_the_hashes_the_suite_gives(tmp_path: Path) -> None:
    """build_manifest takes the case and domain hashes once and the suite's hash from them: the same three."""
    from passhat.api import evaluate

    suite = load_suite("refunds")
    evaluate("refunds", "careful", trials=1, out=tmp_path / "run", sanity=False)
    block = Manifest.load(tmp_path / "run" / "manifest.json").suite
    assert (block.hash, block.cases, block.domains) == (suite.content_hash(), suite.case_hashes(),
                                                        {n: d.content_hash() for n, d in suite.domains.items()})


@pytest.mark.parametrize(("content", "said"), [
    (b"\xff\xfe\x00", ":1: not UTF-8 text (invalid start byte at byte 0)"),  # was UnicodeDecodeError: exit 70
    (b'{"format":\n', "line 2, column 1: cannot read suite snapshot: invalid YAML:"),  # was three lines
    (None, "is a named pipe (FIFO); expected a regular file (suite snapshot)"),  # was a hang
])
def test_a_bad_snapshot_is_one_line_of_bad_input(split_suite: Path, tmp_path: Path, content: bytes | None,
                                                 said: str) -> None:
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_bytes(content) if content is not None else os.mkfifo(snapshot)
    for args in (["suite", "verify", str(split_suite), "--frozen", str(snapshot)],
                 ["run", str(split_suite), "--agent", f"{AGENTS}:good", "--frozen", str(snapshot),
                  "--out", str(tmp_path / "run")]):
        box: list[tuple[int, str]] = []
        worker = threading.Thread(target=lambda a=args, b=box: b.append(cli(*a)), daemon=True)
        worker.start()
        worker.join(30)
        assert box, f"hung: passhat {' '.join(args)}"
        code, output = box[0]
        [line] = output.splitlines()
        assert code == 2 and line.startswith(f"error: {snapshot}") and said in line, output
        assert not (tmp_path / "run").exists()
