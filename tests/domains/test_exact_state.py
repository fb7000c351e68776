"""The built-in inv-102 with ``expect_state: reference`` catches what the case without it let through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

import passhat
from passhat.cases import load_suite
from passhat.cases.suite import BUILTIN_ROOT
from passhat.regrade.record import regrade_record

INV_102 = BUILTIN_ROOT / "reimbursement" / "cases" / "inv-102.yaml"


def old_and_new_inv_102(folder: Path) -> Path:
    """The case as shipped, and the same case without its reference and expect_state (as it was before them)."""
    folder.mkdir()
    new = yaml.safe_load(INV_102.read_text("utf-8"))
    old = {**new, "id": "inv-102-old", "assertions": [a for a in new["assertions"] if "expect_state" not in a]}
    del old["reference"]
    assert len(old["assertions"]) == len(new["assertions"]) - 1
    (folder / "inv-102.yaml").write_text(INV_102.read_text("utf-8"))
    (folder / "inv-102-old.yaml").write_text(yaml.safe_dump(old, allow_unicode=True))
    return folder


async def files_inv_102_on_a_project(ep: Any) -> str:
    """Everything right (amount, over-limit, approver, reply), plus a project nobody asked to charge."""
    await ep.call("query_invoices", {"invoice_id": "INV-102"})
    await ep.call("search_policy", {"query": "taxi limit", "city": "Shanghai"})
    ticket = await ep.call("create_reimbursement_ticket",
                           {"invoice_id": "INV-102", "amount": 118.5, "over_limit": 38.5, "project_code": "P-77"})
    return f"Filed ticket {ticket.content['id']}: 118.5 CNY, 38.5 over the limit, waiting for your manager."


async def files_inv_102(ep: Any) -> str:
    await ep.call("query_invoices", {"invoice_id": "INV-102"})
    await ep.call("search_policy", {"query": "taxi limit", "city": "Shanghai"})
    ticket = await ep.call("create_reimbursement_ticket", {"invoice_id": "INV-102", "amount": 118.5, "over_limit": 38.5})
    return f"Filed ticket {ticket.content['id']}."


def test_exact_expected_state_catches_an_extra_change_to_the_right_row(tmp_path: Path) -> None:
    cases = old_and_new_inv_102(tmp_path / "cases")
    run = passhat.evaluate(cases, files_inv_102_on_a_project, trials=2, out=tmp_path / "run", sanity=False)
    outcomes = {(r.case_id, r.trial): r.outcome for r in run.records()}
    assert outcomes == {("inv-102-old", 0): "pass", ("inv-102-old", 1): "pass",
                        ("inv-102", 0): "fail", ("inv-102", 1): "fail"}
    [failure] = run.failures()
    assert failure.case_id == "inv-102" and failure.check is not None
    assert "project_code expected None, actual 'P-77'" in failure.check

    # re-grading the trials of the old case against the new one (the reference diff handed over the same way)
    suite = load_suite(str(cases))
    new = suite.case("inv-102")
    old_records = [r for r in run.records() if r.case_id == "inv-102-old"]
    regraded = [regrade_record(r, new, suite.domain_of(new)) for r in old_records]
    assert [r.outcome for r in regraded] == ["fail", "fail"]
    assert any("project_code expected None, actual 'P-77'" in g.reason for g in regraded[0].grades if not g.passed)

    clean = passhat.evaluate(cases, files_inv_102, trials=2, out=tmp_path / "clean", sanity=False)
    assert {r.outcome for r in clean.records()} == {"pass"}, clean.failure_report()
