"""Runs of the built-in reimbursement suite for the HTML report tests, made once per session."""

from __future__ import annotations

import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def make_run(folder: Path, agent: str, *extra: str) -> Path:
    args = ["run", "reimbursement", "--agent", agent, "--trials", "2", "--out", str(folder), "-q", *extra]
    with ThreadPoolExecutor(1) as pool:  # first asked for by a Chromium test, Playwright's event loop may be running here
        result = pool.submit(CliRunner().invoke, main, args).result()
    assert result.exit_code == 0, result.output
    return folder


@pytest.fixture(scope="session")
def hasty_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hasty: fails 9 of 19 cases for known reasons (duplicate write, permission violation, …), with faults."""
    return make_run(tmp_path_factory.mktemp("html") / "hasty", "hasty")


@pytest.fixture(scope="session")
def careful_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_run(tmp_path_factory.mktemp("html") / "careful", "careful", "--no-report")


@pytest.fixture
def run_copy(hasty_run: Path, tmp_path: Path) -> Path:
    """A private copy of the hasty run that a test may change."""
    return Path(shutil.copytree(hasty_run, tmp_path / "run"))


@pytest.fixture(scope="module")
def browser() -> Any:
    """The system Chromium driven by Playwright (no browser download); skipped when either is missing."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (Debian package 'chromium'); Playwright never downloads a browser here")
    sync_api = pytest.importorskip("playwright.sync_api", reason="needs the playwright package (pip install playwright)")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()
