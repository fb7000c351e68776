"""The report's templates, compiled once and kept between processes (report/html.py ``_CompiledTemplates``): the
same page from the kept code, nothing compiled a second time, and no failed report when the cache cannot be used."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import jinja2
import pytest

from passhat.report import html
from passhat.report.html import write_report


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A cache folder of this test's own, and an environment built anew (as in a new process) each time it is cleared."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    html.environment.cache_clear()
    yield cache
    html.environment.cache_clear()


def page(run: Path) -> str:
    """The page without its version (a new one at every writing)."""
    write_report(run)
    return re.sub(r"[0-9a-f]{16}", "V", (run / "report.html").read_text("utf-8"))


def test_a_page_from_the_kept_code_is_the_page_compiled_from_source(run_copy: Path, fresh: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    first = page(run_copy)
    kept = list(fresh.glob("passhat/templates/*/*.cache"))
    assert kept and all(f.stat().st_size > 1000 for f in kept)
    html.environment.cache_clear()

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled again although the compiled template was kept")

    monkeypatch.setattr(jinja2.Environment, "compile", never)
    assert page(run_copy) == first


def test_a_cache_that_cannot_be_made_or_read_is_no_cache(run_copy: Path, fresh: Path) -> None:
    first = page(run_copy)
    for kept in fresh.glob("passhat/templates/*/*.cache"):
        kept.write_bytes(kept.read_bytes()[:40])  # cut short: compiled again, and written whole
    html.environment.cache_clear()
    assert page(run_copy) == first
    assert all(f.stat().st_size > 1000 for f in fresh.glob("passhat/templates/*/*.cache"))
    fresh.joinpath("passhat").rename(fresh.parent / "elsewhere")
    fresh.joinpath("passhat").write_text("a file where the folder would be")
    html.environment.cache_clear()
    assert page(run_copy) == first


def test_a_folder_another_user_could_write_is_not_used(run_copy: Path, fresh: Path) -> None:
    page(run_copy)
    folder = next(fresh.glob("passhat/templates/*"))
    for kept in folder.iterdir():
        kept.unlink()
    os.chmod(folder, 0o777)
    html.environment.cache_clear()
    page(run_copy)
    assert list(folder.iterdir()) == []
