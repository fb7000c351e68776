"""``passhat view``: an index of the runs in a folder, reports built on first request, loopback only."""

from __future__ import annotations

import os
import re
import shutil
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from passhat.report.view import find_runs, make_server, report_is_stale


@pytest.fixture
def served(hasty_run: Path, careful_run: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    root = tmp_path / "runs"
    shutil.copytree(hasty_run, root / "hasty")
    shutil.copytree(careful_run, root / "team" / "careful run")
    (root / "not-a-run").mkdir()
    server = make_server(root, port=0)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, ""


def test_index_lists_runs_and_links_reports(served: tuple[str, Path]) -> None:
    url, root = served
    assert [(r.path, r.agent) for r in sorted(find_runs(root), key=lambda r: r.path)] == [
        ("hasty", "hasty"), ("team/careful run", "careful")]
    status, html = get(url + "/")
    assert status == 200
    assert 'href="hasty/report.html"' in html and 'href="team/careful%20run/report.html"' in html
    assert "reimbursement" in html and "0.526" in html and "1.000" in html


def test_missing_or_stale_report_is_built_on_request(served: tuple[str, Path]) -> None:
    url, root = served
    run = root / "team" / "careful run"
    assert not (run / "report.html").exists(), "made with --no-report"
    status, html = get(url + "/team/careful%20run/report.html")
    assert status == 200 and "careful" in html and (run / "report.html").exists()
    first_chunk = re.search(r'data-chunk="([^"]+)"', html).group(1)  # type: ignore[union-attr]
    status, chunk = get(url + "/team/careful%20run/" + first_chunk)
    assert status == 200 and chunk.startswith("passhat.add(")
    earlier = (run / "trials.jsonl").stat().st_mtime - 5
    os.utime(run / "report.html", (earlier, earlier))
    assert report_is_stale(run)
    get(url + "/team/careful%20run/report.html")
    assert not report_is_stale(run)


def test_server_listens_on_loopback_and_stays_in_its_folder(served: tuple[str, Path]) -> None:
    url, root = served
    assert url.startswith("http://127.0.0.1:")
    status, _ = get(url + "/../../etc/passwd")
    assert status == 404
    status, _ = get(url + "/not-a-run/report.html")
    assert status == 404
