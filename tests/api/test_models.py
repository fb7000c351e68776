"""The run files as versioned models: dumps round-trip, other versions are refused by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import passhat
from passhat.models import Comparison, FileFormatError, GateResult, Manifest, SchemaVersionError, ShadowReport, Summary
from passhat.runner.store import RunStore

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("runs")
    cases = ["refund-4812", "refund-4812-drop-response", "over-amount-4830"]
    base = passhat.evaluate("refunds", "careful", trials=2, out=root / "base", cases=cases, gate=EXAMPLES / "gate.yaml")
    cand = passhat.evaluate("refunds", "hasty", trials=2, out=root / "cand", cases=cases, by=["risk"])
    cand.compare(base, by=["risk"]).dump(root / "comparison.json")
    return {"base": base.folder, "cand": cand.folder, "comparison": root / "comparison.json"}


@pytest.mark.parametrize(("model", "where"), [(Manifest, "cand/manifest.json"), (Summary, "cand/summary.json"),
                                              (GateResult, "base/gate.json"), (Comparison, "comparison.json")])
def test_files_round_trip_through_their_models(runs: dict[str, Path], model: Any, where: str) -> None:
    path = runs["base"].parent / where
    on_disk = json.loads(path.read_text())
    loaded = model.load(path)
    assert on_disk["schema_version"] == model.schema_id()
    assert json.loads(loaded.to_json()) == on_disk  # written as its dump, read back unchanged
    assert model.from_dict(on_disk) == loaded


def test_typed_access_reaches_every_level(runs: dict[str, Path]) -> None:
    summary = Summary.load(runs["cand"] / "summary.json")
    assert summary.suite.pass_hat_k[2].estimate == pytest.approx(1 / 3)
    assert summary.case("refund-4812-drop-response").pass_hat_k[1] == 0.0
    assert set(summary.strata["risk"]) >= {"high"} and summary.strata["risk"]["high"].pass_hat_k[1].cases >= 1
    comparison = Comparison.load(runs["comparison"])
    assert comparison.strata["risk"]["high"].cases >= 1
    # hasty takes two of the three cases from 2/2 to 0/2: each alone could be chance (1/6), both together
    # are not (1/36), so both are significant new failures
    assert len(comparison.significant_new_failures) == 2 == len(comparison.changes.new_failures)
    gate = GateResult.load(runs["base"] / "gate.json")
    assert gate.gate.preregistered and gate.run.agent == "careful" and gate.rules[0].kind == "never_fails"
    manifest = Manifest.load(runs["base"] / "manifest.json")
    assert manifest.gate is not None and manifest.case_meta("refund-4812").domain == "refunds"
    with pytest.raises(KeyError, match="no case 'nope'"):
        summary.case("nope")


def test_an_old_summary_is_refused_by_name_and_recomputed_when_read_as_a_run(runs: dict[str, Path], tmp_path: Path) -> None:
    path = runs["cand"] / "summary.json"
    old = {k: v for k, v in json.loads(path.read_text()).items() if k != "schema_version"}
    old_path = tmp_path / "summary.json"
    old_path.write_text(json.dumps({"format": "passhat.summary/2", **old}))
    with pytest.raises(SchemaVersionError) as caught:
        Summary.load(old_path)
    message = str(caught.value)
    assert str(old_path) in message and "passhat.summary/2" in message and "passhat.summary/3" in message
    assert "older" in message and "passhat show" in message


def test_versions_of_other_kinds_and_newer_files_are_refused(runs: dict[str, Path], tmp_path: Path) -> None:
    manifest = json.loads((runs["cand"] / "manifest.json").read_text())
    newer = tmp_path / "manifest.json"
    newer.write_text(json.dumps({**manifest, "schema_version": "passhat.manifest/2"}))
    with pytest.raises(SchemaVersionError, match=r"manifest.json: has schema_version passhat.manifest/2, newer .* upgrade"):
        Manifest.load(newer)
    with pytest.raises(SchemaVersionError, match="is a 'passhat.manifest/1' file, not passhat.summary"):
        Summary.load(runs["cand"] / "manifest.json")
    # a run folder whose manifest is newer is refused by every reader, naming the file
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "manifest.json").write_text(newer.read_text())
    with pytest.raises(SchemaVersionError, match=str(folder / "manifest.json")):
        passhat.Run.open(folder)
    with pytest.raises(SchemaVersionError):
        RunStore(folder).manifest()


def test_files_written_before_versions_were_recorded(runs: dict[str, Path], tmp_path: Path) -> None:
    """Manifests, gate results and comparisons had today's shape before they carried a version: read as it."""
    for model, where in ((Manifest, "cand/manifest.json"), (GateResult, "base/gate.json"),
                         (Comparison, "comparison.json")):
        data = json.loads((runs["base"].parent / where).read_text())
        del data["schema_version"]
        path = tmp_path / Path(where).name
        path.write_text(json.dumps(data))
        assert model.load(path).schema_version == model.schema_id()


def test_a_malformed_file_names_the_file_and_the_field(runs: dict[str, Path], tmp_path: Path) -> None:
    manifest = json.loads((runs["cand"] / "manifest.json").read_text())
    bad = tmp_path / "manifest.json"
    bad.write_text(json.dumps({**manifest, "trials": "many"}))
    with pytest.raises(FileFormatError, match=r"manifest.json: trials: .*integer"):
        Manifest.load(bad)
    bad.write_text("{not json")
    with pytest.raises(FileFormatError, match="not valid JSON"):
        Manifest.load(bad)


def test_every_field_is_documented() -> None:
    """The models are the file formats' reference: every field says what it is (attribute docstrings)."""
    undocumented = []
    for model in (Manifest, Summary, GateResult, Comparison, ShadowReport):
        schema = model.model_json_schema()
        for name, definition in [(model.__name__, schema), *schema.get("$defs", {}).items()]:
            assert definition.get("description"), name
            undocumented += [f"{name}.{f}" for f, spec in definition.get("properties", {}).items()
                             if not spec.get("description")]
    assert undocumented == []
