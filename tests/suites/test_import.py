"""``passhat cases import``: real requests into redacted, unfinished case skeletons that lint refuses."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from passhat.cases.load import load_case
from passhat.cli import main

NOTES = Path(__file__).parents[1] / "data" / "notes"


def jsonl(path: Path, *rows: object) -> Path:
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", "utf-8")
    return path


def test_import_writes_redacted_skeletons_that_lint_flags(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "requests.jsonl",
                   {"id": "ticket 881", "text": "Refund order 4812 and email me at mei.chen@example.com", "channel": "chat"},
                   {"request": "我的订单 4850 退款到卡上,电话 13812345678", "identity": "C-1006", "tags": {"lang": "zh"},
                    "group": "refund-4850"},
                   {"message": "where is my parcel?", "split": "holdout", "channel": "mail", "latency_ms": 5})
    out = tmp_path / "imported"
    r = CliRunner().invoke(main, ["cases", "import", str(source), "--domain", "refunds", "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert r.output.splitlines() == [
        f"wrote 3 skeleton(s) to {out} (tags: source=production, split: dev); finish the TODOs, then "
        f"`passhat cases lint {out}`",
        "ignored fields: channel (2 line(s)), latency_ms (1 line(s))"]
    files = sorted(p.name for p in out.glob("*.yaml"))
    assert files == ["prod-0002.yaml", "prod-0003.yaml", "prod-ticket-881.yaml"]

    first = load_case(out / "prod-ticket-881.yaml")  # a valid case file, only unfinished
    assert first.instruction == "Refund order 4812 and email me at [REDACTED:email]"
    assert first.tags == {"source": "production"} and first.split == "dev" and first.domain == "refunds"
    assert first.assertions == [] and first.description.startswith("TODO")
    assert first.user.identity is not None and first.user.identity.startswith("TODO")
    second = load_case(out / "prod-0002.yaml")
    assert "[REDACTED:phone]" in second.instruction and "13812345678" not in (out / "prod-0002.yaml").read_text()
    assert second.user.identity == "C-1006" and second.tags == {"lang": "zh", "source": "production"}
    assert second.group == "refund-4850"
    assert load_case(out / "prod-0003.yaml").split == "holdout"
    assert (out / "prod-0003.yaml").read_text().startswith("# Imported from requests.jsonl line 3")

    r = CliRunner().invoke(main, ["cases", "lint", str(out), "--json"])
    assert r.exit_code == 1
    found = {(Path(f["file"]).stem, f["code"]) for f in json.loads(r.output)["findings"]}
    for stem in ("prod-ticket-881", "prod-0002", "prod-0003"):
        assert (stem, "no-assertions") in found and (stem, "unfinished") in found


def test_import_checks_everything_before_writing(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "bad.jsonl", {"text": "fine"}, {"channel": "chat"})
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["cases", "import", str(source), "--domain", "refunds", "--out", str(out)])
    assert r.exit_code == 2 and "line 2" in r.output and "no request text" in r.output
    assert not out.exists()
    (tmp_path / "broken.jsonl").write_text('{"text": "a"}\nnot json\n')
    r = CliRunner().invoke(main, ["cases", "import", str(tmp_path / "broken.jsonl"), "--domain", "refunds", "--out", str(out)])
    assert r.exit_code == 2 and "line 2" in r.output
    r = CliRunner().invoke(main, ["cases", "import", str(source), "--domain", "nowhere_xyz:domain", "--out", str(out)])
    assert r.exit_code == 2 and "--domain" in r.output


def test_import_with_a_domain_file_and_without_redaction(tmp_path: Path) -> None:
    source = jsonl(tmp_path / "r.jsonl", {"text": "note: call bob at bob@example.com", "fixture": "default"})
    out = tmp_path / "suite" / "cases"
    r = CliRunner().invoke(main, ["cases", "import", str(source), "--domain", str(NOTES / "domain.py"), "--out", str(out),
                                  "--no-redact"])
    assert r.exit_code == 0, r.output
    data = yaml.safe_load((out / "prod-0001.yaml").read_text())
    assert data["instruction"] == "note: call bob at bob@example.com"
    assert (out / data["domain"]).resolve() == (NOTES / "domain.py").resolve()  # relative to the cases folder
    r = CliRunner().invoke(main, ["cases", "lint", str(out), "--json"])
    assert r.exit_code == 1  # its domain loads; it is only unfinished
    assert {f["code"] for f in json.loads(r.output)["findings"]} == {"no-assertions", "unfinished"}
