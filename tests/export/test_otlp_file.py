"""``passhat export-otlp --file``: the same spans as OTLP/JSON, one trace per line, with the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import passhat
from passhat.cli import main


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("otlp-file") / "run"
    passhat.evaluate("refunds", "careful", trials=1, cases=["refund-4812", "order-number-on-request-4840"], out=out,
                     sanity=False, on_warning=lambda _: None)
    return out


def attrs(span: dict) -> dict:
    return {a["key"]: next(iter(a["value"].values())) for a in span["attributes"]}


def test_file_holds_one_request_per_trial_with_the_conversation(run: Path, tmp_path: Path) -> None:
    r = CliRunner().invoke(main, ["export-otlp", str(run), "--file", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 0 and "2 trace(s) written" in r.output, r.output
    records = {json.loads(line)["case_id"]: json.loads(line) for line in (run / "trials.jsonl").read_text().splitlines()}
    for line in (tmp_path / "t.jsonl").read_text().splitlines():
        [resource] = json.loads(line)["resourceSpans"]
        spans = resource["scopeSpans"][0]["spans"]
        root = next(s for s in spans if "parentSpanId" not in s)
        record = records[attrs(root)["passhat.case_id"]]
        assert len({s["traceId"] for s in spans}) == 1 and len(spans[0]["traceId"]) == 32
        assert {s["spanId"] for s in spans} == {s["span_id"] for s in record["spans"]}
        assert attrs(root)["user.id"] in ("C-1001", "C-1005") and attrs(root)["passhat.fixture"] == "default"
        agent = attrs(next(s for s in spans if attrs(s).get("gen_ai.operation.name") == "invoke_agent"))
        said = json.loads(agent["gen_ai.input.messages"])
        assert said[0] == {"role": "user", "parts": [{"type": "text", "content": record["messages"][0]["text"]}]}
        assert json.loads(agent["gen_ai.output.messages"])[0]["parts"][0]["content"] == record["reply"]
        assert agent["gen_ai.conversation.id"] == f"{record['case_id']}-t0"
    multi = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text().splitlines()]
    assert any("Oh sorry - it's order 4840" in line for line in map(json.dumps, multi))  # the user's later turn


def test_file_and_endpoint_exclude_each_other(run: Path, tmp_path: Path) -> None:
    both = CliRunner().invoke(main, ["export-otlp", str(run), "--file", str(tmp_path / "t"), "--endpoint", "http://h:1"])
    neither = CliRunner().invoke(main, ["export-otlp", str(run)])
    assert both.exit_code == neither.exit_code == 2 and "not both" in both.output
    no_content = CliRunner().invoke(main, ["export-otlp", str(run), "--file", str(tmp_path / "n"), "--no-content"])
    assert no_content.exit_code == 0 and "gen_ai.input.messages" not in (tmp_path / "n").read_text()
