"""report.html of a gated run in headless Chromium: the headline, then the gate's verdict and every rule, above
the fold; screenshots of both, checked pixel by pixel in the browser (no image library needed) and saved to
tests/artifacts/ for a person to look at."""

from __future__ import annotations

import base64
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from passhat.cli import main
from passhat.models import Summary
from passhat.report.headline import headline

ROOT = Path(__file__).parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts"
FAIL_RGB = (0xCF, 0x22, 0x2E)  # --fail in report.css
COUNT_COLOUR = """async ([png, rgb]) => {
  const img = new Image();
  img.src = "data:image/png;base64," + png;
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = img.width; canvas.height = img.height;
  const ctx = canvas.getContext("2d");
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, img.width, img.height).data;
  let near = 0, dark = 0;
  for (let i = 0; i < data.length; i += 4) {
    const d = Math.abs(data[i] - rgb[0]) + Math.abs(data[i + 1] - rgb[1]) + Math.abs(data[i + 2] - rgb[2]);
    if (d < 40) near++;
    if (data[i] + data[i + 1] + data[i + 2] < 200) dark++;
  }
  return [img.width, img.height, near, dark];
}"""


@pytest.fixture(scope="module")
def gated_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """hasty against the example gate: FAIL (it breaks the permission cases)."""
    out = tmp_path_factory.mktemp("gated") / "hasty"
    args = ["run", "reimbursement", "--agent", "hasty", "--trials", "2", "--out", str(out),
            "--gate", str(ROOT / "examples" / "gate.yaml"), "-q"]
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API may keep an event loop running in this thread
        result = pool.submit(CliRunner().invoke, main, args).result()
    assert result.exit_code == 1, result.output
    return out


def pixels(page: Any, png: bytes, rgb: tuple[int, int, int]) -> tuple[int, int, int, int]:
    """(width, height, pixels within a small distance of ``rgb``, dark pixels) of a PNG, decoded by the browser."""
    return tuple(page.evaluate(COUNT_COLOUR, [base64.b64encode(png).decode(), list(rgb)]))  # type: ignore[return-value]


def test_the_headline_and_the_gate_come_first(browser: Any, gated_run: Path) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto((gated_run / "report.html").resolve().as_uri())
    gate = json.loads((gated_run / "gate.json").read_text())

    line = page.locator("#headline")
    assert line.inner_text() == headline(Summary.load(gated_run / "summary.json")).text, "the page says what the terminal says"
    boxes = {name: page.locator(sel).bounding_box() for name, sel in
             (("headline", "#headline"), ("gate", "#gate"), ("kpis", "section.kpis"), ("curves", "#curves"))}
    assert boxes["headline"]["y"] < boxes["gate"]["y"] < boxes["kpis"]["y"] < boxes["curves"]["y"]
    assert boxes["gate"]["y"] + boxes["gate"]["height"] <= 1000, "verdict and every rule above the fold"

    verdict = page.locator("#gate .verdict")
    assert verdict.inner_text() == gate["outcome"] == "FAIL"
    rules = page.locator("#gate-rules tbody tr")
    assert rules.count() == len(gate["rules"])
    for i, rule in enumerate(gate["rules"]):
        cells = rules.nth(i).locator("td")
        assert cells.nth(0).inner_text() == rule["outcome"] and cells.nth(1).inner_text() == rule["name"]
        assert cells.nth(5).inner_text() == rule["reason"]
        assert rules.nth(i).is_visible()

    ARTIFACTS.mkdir(exist_ok=True)
    shot_gate = page.locator("#gate").screenshot(path=str(ARTIFACTS / "report-gate.png"))
    shot_line = line.screenshot(path=str(ARTIFACTS / "report-headline.png"))
    width, height, red, _ = pixels(page, shot_gate, FAIL_RGB)
    # a screenshot spans whole pixels, floor(top) to ceil(bottom): up to 2 px more than a fractional box
    assert abs(width - boxes["gate"]["width"]) < 2 and abs(height - boxes["gate"]["height"]) < 2
    assert red > 500, "a failed gate is drawn in the fail colour (border, verdict, FAIL rules)"
    _, _, _, dark = pixels(page, shot_line, FAIL_RGB)
    assert dark > 500, "the headline's text is drawn"

    page.locator("#headline a[href='#def-pass_hat_k']").click()
    assert page.locator("#def-pass_hat_k").is_visible(), "each figure links to its definition"
    assert errors == []
    page.close()
