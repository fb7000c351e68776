"""``passhat cases import --format tau-bench PATH``: a suite per environment, a case per task, clear errors."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from passhat.cli import main
from passhat.domain import Domain, load_domain
from passhat.tools import ToolContext
from passhat.world import World


def call(domain: Domain, tool: str, **args: Any) -> Any:
    world = World.restore(domain.image("default"), seed=0)
    try:
        return domain.tools[tool].func(ToolContext(world), **args)
    finally:
        world.close()


def run_import(*args: str) -> object:
    return CliRunner().invoke(main, ["cases", "import", "--format", "tau-bench", *args])


def test_each_environment_becomes_a_suite_and_each_task_a_case(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "suites"
    r = run_import(str(checkout), "--out", str(out))
    assert r.exit_code == 0, r.output
    assert f"wrote {out / 'retail'}: τ-bench retail, 3 case(s) from tasks_test.py" in r.output
    assert sorted(p.name for p in (out / "retail" / "cases").iterdir()) == [
        "retail-test-000.yaml", "retail-test-001.yaml", "retail-test-002.yaml"]
    assert [p.name for p in (out / "airline" / "cases").iterdir()] == ["airline-test-000.yaml"]

    first = yaml.safe_load((out / "retail" / "cases" / "retail-test-000.yaml").read_text())
    assert first["domain"] == "../domain.py" and first["split"] == "holdout"
    assert first["user"]["identity"] == "noah_brown_1234" and first["user"]["goal"].startswith("You are Noah Brown")
    assert first["instruction"] != first["user"]["goal"]  # τ-bench's instruction is for the user, not the agent
    assert first["reference"][2] == {"tool": "cancel_pending_order",
                                     "args": {"order_id": "#W0000001", "reason": "no longer needed"}}
    assert first["assertions"] == [{"expect_state": "reference"}]
    second = yaml.safe_load((out / "retail" / "cases" / "retail-test-001.yaml").read_text())
    assert second["assertions"] == [{"expect_state": "reference"},
                                    {"reply_contains": {"text": "128.5", "normalize": ["numbers"]}}]


def test_the_domain_runs_the_checkouts_tools_with_their_own_schemas(checkout: Path, tmp_path: Path) -> None:
    assert run_import(str(checkout), "--out", str(tmp_path / "s")).exit_code == 0
    domain = load_domain(str(tmp_path / "s" / "retail" / "domain.py"))
    tools = {t.name: t for t in domain.tool_list()}
    assert {n: (t.kind, t.ends_episode) for n, t in tools.items()} == {
        "find_user_id_by_email": ("read", False), "get_order_details": ("read", False),
        "cancel_pending_order": ("write", False), "transfer_to_human_agents": ("read", True)}
    assert tools["cancel_pending_order"].parameters["properties"]["reason"]["enum"] == ["no longer needed",
                                                                                         "ordered by mistake"]
    assert domain.policy.startswith("# Retail agent policy")
    # tau_bench/__init__.py and envs/*/__init__.py import litellm: they never ran, and nothing stays behind
    assert "litellm" not in sys.modules and not any(m.split(".")[0] == "tau_bench" for m in sys.modules)


def test_two_checkouts_in_one_process_keep_their_own_tools(tmp_path: Path, make_checkout: Any) -> None:
    make_checkout(tmp_path / "one", airline=False)
    two = make_checkout(tmp_path / "two", airline=False)
    tool = two / "tau_bench" / "envs" / "retail" / "tools" / "transfer_to_human_agents.py"
    tool.write_text(tool.read_text().replace("Transfer successful", "Transferred (two)"))
    for name in ("one", "two"):
        assert run_import(str(tmp_path / name), "--out", str(tmp_path / f"s-{name}")).exit_code == 0
    d1, d2 = (load_domain(str(tmp_path / f"s-{n}" / "retail" / "domain.py")) for n in ("one", "two"))
    assert call(d1, "transfer_to_human_agents", summary="x") == "Transfer successful"
    assert call(d2, "transfer_to_human_agents", summary="x") == "Transferred (two)"
    assert d1.content_hash() != d2.content_hash()


def test_a_folder_that_is_not_a_checkout_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    r = run_import(str(tmp_path / "empty"), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2
    assert f"{tmp_path / 'empty'}: not a τ-bench checkout: expected tau_bench/envs/retail" in r.output
    assert not (tmp_path / "out").exists()


def test_a_task_naming_an_unknown_tool_is_bad_input_naming_the_file(checkout: Path, tmp_path: Path) -> None:
    tasks = checkout / "tau_bench" / "envs" / "retail" / "tasks_test.py"
    tasks.write_text(tasks.read_text().replace('name="get_order_details", kwargs={"order_id": "#W0000004"}',
                                               'name="refund_everything", kwargs={}'))
    r = run_import(str(checkout), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2
    message = " ".join(r.output.split())
    assert f"{tasks}: task 2 (line " in message and "actions[0]: unknown tool 'refund_everything'" in message
    assert "cancel_pending_order, find_user_id_by_email" in message
    assert not (tmp_path / "out").exists()  # checked before anything is written


def test_task_files_are_read_not_run(checkout: Path, tmp_path: Path) -> None:
    tasks = checkout / "tau_bench" / "envs" / "airline" / "tasks_test.py"
    tasks.write_text(tasks.read_text().replace('"total_baggages": 3', '"total_baggages": compute()'))
    r = run_import(str(checkout), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2 and f"{tasks}: task 0 (line 5), line 10: " in r.output
    assert "not a literal value: 'compute()'" in " ".join(r.output.split())


def test_tools_that_fail_to_import_are_bad_input_naming_the_file(checkout: Path, tmp_path: Path) -> None:
    broken = checkout / "tau_bench" / "envs" / "retail" / "tools" / "get_order_details.py"
    broken.write_text(broken.read_text().replace("import json", "import json, missing_helper_module"))
    r = run_import(str(checkout), "--out", str(tmp_path / "out"))
    assert r.exit_code == 2
    message = " ".join(r.output.split())
    assert "cannot import τ-bench's tools" in message and f"{broken}, line 1" in message
    assert "No module named 'missing_helper_module'" in message


def test_an_earlier_import_is_not_overwritten_and_options_are_checked(checkout: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_import(str(checkout), "--out", str(out)).exit_code == 0
    r = run_import(str(checkout), "--out", str(out))
    assert r.exit_code == 2 and "already exists" in r.output
    r = run_import(str(checkout), "--domain", "refunds")
    assert r.exit_code == 2 and "--domain is for --format requests" in r.output
    r = run_import(str(checkout), "--tasks", "train", "--out", str(tmp_path / "t"))
    assert r.exit_code == 2 and "no environment has tasks_train.py" in r.output and "airline: tasks_test.py" in r.output
    r = CliRunner().invoke(main, ["cases", "import", str(checkout), "--domain", "refunds", "--out", str(out)])
    assert r.exit_code == 2 and "give --format tau-bench" in r.output
