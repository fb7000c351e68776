"""Loading a suite builds each fixture image once, not once per case (issue 12 item 7).

Builds and copies are counted, never timed.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from passhat.cases import load_suite

NOTES = Path(__file__).parents[1] / "data" / "notes"


def notes_suite(root: Path, spellings: list[str]) -> Path:
    """The notes domain in ``root`` and one copy of its add-note case per domain spelling, in ``root/cases``."""
    (root / "cases").mkdir(parents=True)
    shutil.copy(NOTES / "domain.py", root / "domain.py")
    shutil.copy(NOTES / "fixture.yaml", root / "fixture.yaml")
    case = yaml.safe_load((NOTES / "cases" / "add-note.yaml").read_text())
    for i, spelling in enumerate(spellings):
        (root / "cases" / f"case-{i:02d}.yaml").write_text(yaml.safe_dump({**case, "id": f"case-{i:02d}",
                                                                           "domain": spelling}))
    return root / "cases"


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of domain files executed and fixture images built."""
    import passhat.domain
    from passhat.world import FixtureImage

    counts = {"imports": 0, "builds": 0}
    real_import, real_build = passhat.domain.import_file, FixtureImage.build.__func__  # type: ignore[attr-defined]

    def import_file(*args: Any, **kw: Any) -> Any:
        counts["imports"] += 1
        return real_import(*args, **kw)

    def build(cls: Any, *args: Any, **kw: Any) -> Any:
        counts["builds"] += 1
        return real_build(cls, *args, **kw)

    monkeypatch.setattr(passhat.domain, "import_file", import_file)
    monkeypatch.setattr(FixtureImage, "build", classmethod(build))
    return counts


def test_a_suite_of_many_cases_on_one_fixture_builds_and_copies_its_image_once(tmp_path: Path,
                                                                               counted: dict[str, int]) -> None:
    suite = load_suite(str(notes_suite(tmp_path, ["../domain.py"] * 12)))
    suite.content_hash()
    assert len(suite.cases) == 12
    assert counted == {"imports": 1, "builds": 1}
    image = suite.domain_of(suite.cases[0]).image("default")
    assert image.copies.made == 1  # checking 12 cases (and hashing the fixture) reused one pooled copy


def test_two_spellings_of_one_domain_path_load_it_once(tmp_path: Path, counted: dict[str, int]) -> None:
    spellings = ["../domain.py", ".././domain.py", f"../../{tmp_path.name}/domain.py", str(tmp_path / "domain.py"), ".."]
    suite = load_suite(str(notes_suite(tmp_path, spellings)))
    assert counted == {"imports": 1, "builds": 1}
    assert len({id(d) for d in suite.domains.values()}) == 1
    assert set(suite.domains) == set(spellings)  # the manifest still names each case's domain as it is written


def test_a_reloaded_suite_sees_an_edited_fixture(tmp_path: Path, counted: dict[str, int]) -> None:
    cases = notes_suite(tmp_path, ["../domain.py"] * 3)
    first = load_suite(str(cases)).content_hash()
    fixture = tmp_path / "fixture.yaml"
    fixture.write_text(fixture.read_text().replace("alice", "alicia", 1))
    assert load_suite(str(cases)).content_hash() != first
    assert counted == {"imports": 2, "builds": 2}  # once per load: a load never serves a stale image
