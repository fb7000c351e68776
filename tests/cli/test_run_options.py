"""One run configuration: ``passhat run``'s options, ``evaluate()``'s arguments and the manifest's ``options``
are the fields of one :class:`RunOptions`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import passhat
from passhat.api.options import SESSION_FIELDS, RunOptions, continue_options
from passhat.commands.run import run as run_command
from passhat.commands.run_options import API_ONLY, FIELD_OF, as_fields
from passhat.errors import PasshatError

CLI_ONLY = {"suite", "agent_spec", "out", "resume", "quiet", "junit", "summary_md", "no_report", "otlp",
            "max_error_rate", "pg_url"}
"""``passhat run`` parameters that are about the command (where, what to print), not the run's options."""


def test_every_option_of_a_run_is_one_field_and_every_field_has_its_option() -> None:
    params = {p.name for p in run_command.params}
    assert params - CLI_ONLY == set(FIELD_OF), "a `passhat run` option that is neither a RunOptions field nor CLI-only"
    assert set(FIELD_OF.values()) | API_ONLY == set(RunOptions.model_fields)


def test_the_commands_defaults_are_the_fields_defaults() -> None:
    """An option left out and an option given at its default describe the same run."""
    ctx = run_command.make_context("run", ["refunds", "--agent", "careful"])
    fields = as_fields(ctx.params)
    assert set(fields) == set(FIELD_OF.values())
    defaults = RunOptions()
    for field, value in fields.items():
        assert RunOptions.build(**{field: value}) == defaults, f"{field}: the option's default is {value!r}"


def test_an_unknown_or_bad_option_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(PasshatError, match="run option 'trails': unknown; did you mean 'trials'"):
        passhat.evaluate("refunds", "careful", trails=3, out=tmp_path / "x")
    with pytest.raises(PasshatError, match="run option 'cases'.*not one string"):
        passhat.evaluate("refunds", "careful", cases="refund-4812", out=tmp_path / "y")
    with pytest.raises(PasshatError, match="run option 'seed'"):
        RunOptions.build(seed=-1)
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_options_and_keywords_combine_and_the_manifest_records_them(tmp_path: Path) -> None:
    base = RunOptions(trials=1, cases=("refund-4812",), sanity=False)
    run = passhat.evaluate("refunds", "careful", base, seed=7, redact_patterns={"ticket": r"T-\d+"},
                           out=tmp_path / "run")
    stored = json.loads((tmp_path / "run" / "manifest.json").read_text())["options"]
    assert stored["trials"] == 1 and stored["seed"] == 7 and stored["cases"] == ["refund-4812"]
    assert run.options == RunOptions.build(base, seed=7, redact_patterns={"ticket": r"T-\d+"})
    assert passhat.Run.open(run.folder).options == run.options  # read back as it was written


def test_rate_limits_and_relays_are_written_as_data_and_read_back_equal() -> None:
    options = RunOptions.build(rate_limits={"gpt-x": "60/1000", "m": 30}, agent_model_relay={"openai": "http://h:1/v1"})
    written = options.to_manifest()
    assert written["rate_limits"]["gpt-x"] == {"requests": 60.0, "tokens": 1000.0, "window_s": 60.0}
    assert written["agent_model_relay"] == ["openai=http://h:1/v1"]
    assert RunOptions.model_validate(json.loads(json.dumps(written))) == options


def test_paths_are_recorded_absolute_so_a_resume_elsewhere_finds_them(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    Path("prices.yaml").write_text("m: {input: 1, output: 2}\n")
    assert RunOptions(prices=Path("prices.yaml")).resolved().prices == tmp_path / "prices.yaml"


def test_resume_keeps_what_was_measured_and_lets_the_session_change(tmp_path: Path) -> None:
    started = RunOptions(trials=8, seed=3, concurrency=4).to_manifest()
    assert continue_options(started, RunOptions.build(), tmp_path) == RunOptions(trials=8, seed=3, concurrency=4)
    again = continue_options(started, RunOptions.build(trials=8, concurrency=16, executor="local"), tmp_path)
    assert again.trials == 8 and again.concurrency == 16  # the same value given again, and a session field changed
    with pytest.raises(PasshatError, match=r"started with trials=8 \(now 4\).*leave that option out"):
        continue_options(started, RunOptions.build(trials=4), tmp_path)
    assert "concurrency" in SESSION_FIELDS and "trials" not in SESSION_FIELDS and "user" not in SESSION_FIELDS


def test_a_manifest_from_before_options_were_recorded_resumes_with_the_options_given(tmp_path: Path) -> None:
    given = RunOptions.build(trials=2)
    assert continue_options(None, given, tmp_path) is given
    with pytest.raises(PasshatError, match="its options cannot be read.*another passhat version"):
        continue_options({"trials": 2, "warp_drive": True}, given, tmp_path)


def test_the_options_reference_in_the_docs_is_generated_from_the_fields() -> None:
    from passhat.api.options import options_reference

    doc = (Path(__file__).parents[2] / "docs" / "python-api.md").read_text("utf-8")
    assert options_reference() in doc, "regenerate docs/python-api.md's options table from passhat.api.options"
    assert all(f"| `{name}` |" in options_reference() and info.description
               for name, info in RunOptions.model_fields.items()), "every option has a docstring"
