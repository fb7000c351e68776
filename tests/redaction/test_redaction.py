"""Personal data never reaches the run folder unless the user opts out explicitly."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from passhat.cli import main
from passhat.redaction import Redactor, luhn_ok

PII = Path(__file__).parents[1] / "data" / "pii"
SECRETS = ["mei.chen@example.com", "4111 1111 1111 1111", "4111111111111111", "138 0013 8000"]


def run(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "run"
    r = CliRunner().invoke(main, ["run", str(PII / "cases"), "--agent", f"{PII / 'agents.py'}:echo", "--trials", "2",
                                  "--out", str(out), "-q", *extra])
    assert r.exit_code == 0, r.output
    return out


def grep(folder: Path) -> list[str]:
    found = []
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            found += [f"{path.name}: {s}" for s in SECRETS if s in text]
    return found


def test_run_folder_holds_no_email_phone_or_card(tmp_path: Path) -> None:
    out = run(tmp_path)
    assert grep(out) == []
    record = json.loads((out / "trials.jsonl").read_text().splitlines()[0])
    assert record["outcome"] == "pass"  # grading saw the real values; only what is written is redacted
    assert "[REDACTED:email]" in record["reply"] and "[REDACTED:card]" in record["reply"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["redaction"]["enabled"] is True and "email" in manifest["redaction"]["patterns"]


def test_opting_out_is_explicit_and_recorded(tmp_path: Path) -> None:
    out = run(tmp_path, "--no-redact")
    assert any("mei.chen@example.com" in hit for hit in grep(out))
    assert json.loads((out / "manifest.json").read_text())["redaction"]["enabled"] is False


def test_extra_fields_and_patterns(tmp_path: Path) -> None:
    r = Redactor.build(extra_fields=["name"], extra_patterns={"customer": r"C-\d+"})
    assert r.value({"name": "Mei", "note": "customer C-1"}) == {"name": "[REDACTED:name]", "note": "customer [REDACTED:customer]"}
    bad = CliRunner().invoke(main, ["run", str(PII / "cases"), "--agent", "noop", "--redact-pattern", "x=("])
    assert bad.exit_code == 2 and "invalid regular expression" in bad.output


def test_card_numbers_need_a_valid_checksum() -> None:
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    r = Redactor()
    assert r.text("order 1234567890123456") == "order 1234567890123456"
    assert r.text("dates 2026-10-31 and amounts 118.5 stay") == "dates 2026-10-31 and amounts 118.5 stay"


def test_exported_spans_carry_no_personal_data(tmp_path: Path) -> None:
    import gzip
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import pytest

    pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="needs the otel extra")
    from passhat.export import export_run

    bodies: list[bytes] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers["Content-Length"]))
            bodies.append(gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body)
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = run(tmp_path)
        export_run(out, f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
    raw = b"".join(bodies)
    assert b"REDACTED" in raw  # the spans did carry the (redacted) content
    assert not [s for s in SECRETS if s.encode() in raw]


def _max_width(pattern: str) -> int:
    from re import _parser  # type: ignore[attr-defined]

    return int(_parser.parse(pattern).getwidth()[1])


def test_default_patterns_cannot_backtrack_over_the_whole_text() -> None:
    """Linear time, checked by the form of the patterns rather than by a clock.

    A pattern whose matches are at most W characters long does at most a pattern-dependent constant of
    work from each starting position, so redacting n characters costs O(n); one unbounded ``+`` (as in
    ``[A-Za-z0-9._%+-]+@``) rescans the rest of a token-like run from every position: O(n²), minutes for
    a 200 KB reply. ``bench/bench_redaction.py`` measures the result.
    """
    from re import _constants  # type: ignore[attr-defined]

    from passhat.redaction import DEFAULT_PATTERNS

    for name, pattern in DEFAULT_PATTERNS.items():
        width = _max_width(pattern)
        assert width < _constants.MAXREPEAT, f"{name}: unbounded repetition"
        assert width <= 1024, f"{name}: a match may span {width} characters"


def test_large_adversarial_text_is_redacted_whole() -> None:
    r = Redactor()
    blob = "a" * 300_000 + " mei.chen@example.com " + "1" * 300_000 + " 4111 1111 1111 1111 " + "+1" * 100_000
    out = r.text(blob)
    assert "mei.chen@example.com" not in out and "4111 1111 1111 1111" not in out
    assert out.count("[REDACTED:email]") == 1 and out.count("[REDACTED:card]") == 1
    assert out.startswith("a" * 300_000 + " [REDACTED:email] " + "1" * 300_000)


def test_numbers_that_are_not_cards_stay() -> None:
    r = Redactor()
    for text in ["actual 113.71000000000004", "ratio 0.4111111111111111", "id 41111111111111111111111",
                 "ORD-4111111111111111", "at 1764451200.123456", "total 1,234,567.89", "2026-10-31T09:00:00"]:
        assert r.text(text) == text


def test_card_numbers_in_common_spellings() -> None:
    r = Redactor()
    for card in ["4111111111111111", "4111 1111 1111 1111", "4111-1111-1111-1111", "4111.1111.1111.1111",
                 "3782 822463 10005", "3782-822463-10005"]:
        assert r.text(f"card {card}, thanks") == "card [REDACTED:card], thanks", card
    assert r.text("qty 2 4111 1111 1111 1111 exp 2027") == "qty 2 [REDACTED:card] exp 2027"
    assert r.text("[4111111111111111,5500000000000004]") == "[[REDACTED:card],[REDACTED:card]]"
    assert r.text("卡号4111111111111111") == "卡号[REDACTED:card]"
    assert r.text("4111 1111-1111 1111") == "4111 1111-1111 1111"  # mixed separators: not a card spelling


def test_phone_numbers_in_common_spellings() -> None:
    r = Redactor()
    for phone in ["+44 20 7946 0958", "+44 (0)20 7946 0958", "(555) 123-4567", "555.123.4567", "555-123-4567",
                  "+1-555-123-4567", "+1 (555) 123-4567", "1-555-123-4567", "+14155552671", "+86 138 0013 8000",
                  "138 0013 8000", "020 7946 0958", "13800138000"]:
        assert r.text(f"call {phone} today") == "call [REDACTED:phone] today", phone
    for text in ["on 2026-10-31 at 10:00:00 +08:00", "order 1234567", "INV-102 and R-55821", "+1 2", "v10.0.19041.1"]:
        assert r.text(text) == text


def test_personal_data_in_keys_is_redacted() -> None:
    r = Redactor()
    data = {"mei.chen@example.com": {"4111 1111 1111 1111": "visa"}, "li.wei@example.com": 2, "plain": "x"}
    out = r.value(data)
    assert "mei.chen@example.com" not in str(out) and "4111 1111 1111 1111" not in str(out)
    assert out == {"[REDACTED:email]": {"[REDACTED:card]": "visa"}, "[REDACTED:email]#2": 2, "plain": "x"}


class SpelledKey(str):
    """A redacted key that counts how often a ``#N`` suffix is spelled after it (``f"{key}#{n}"`` formats the
    key): the work of numbering keys redacted alike, counted instead of timed."""

    spelled = 0

    def __format__(self, spec: str) -> str:
        SpelledKey.spelled += 1
        return str.__format__(self, spec)


def test_100000_email_keys_are_redacted_in_linear_work_and_every_value_is_kept() -> None:
    """Keys redacted alike used to be numbered by a scan from #2 each time: 10,000 e-mail keys took 29 s
    (issue 25, item 5), n²/2 suffixes spelled. Linear numbering spells about two per key (the one tried, the
    one kept); bench/bench_redaction_keys.py prints the CPU time per tenfold."""
    redactor = Redactor()
    redact = redactor.text
    redactor.text = lambda value: SpelledKey(redact(value))  # type: ignore[method-assign]
    n = 100_000
    SpelledKey.spelled = 0
    out = redactor.value({f"user{i}@example.com": i for i in range(n)})
    assert len(out) == n and sorted(out.values()) == list(range(n))
    assert "[REDACTED:email]" in out and f"[REDACTED:email]#{n}" in out
    assert n - 1 <= SpelledKey.spelled <= 3 * n  # at least one per repeated key: the count is of the numbering


def test_keys_redacted_alike_skip_a_suffix_the_record_already_spells() -> None:
    out = Redactor().value({"a@x.io": 1, "[REDACTED:email]#2": 2, "b@x.io": 3, "c@x.io": 4})
    assert out == {"[REDACTED:email]": 1, "[REDACTED:email]#2": 2, "[REDACTED:email]#3": 3, "[REDACTED:email]#4": 4}


def test_ids_and_times_skip_the_patterns_only_where_no_pattern_could_match() -> None:
    """``_NO_MATCH`` lets ids, span ids and ISO times skip the default patterns: whatever it lets through, the
    patterns leave as it is (random strings of the characters the patterns turn on, and near misses)."""
    import random

    from passhat.redaction import _NO_MATCH

    r = Redactor()
    skipped = ["R-94480", "refund-4812", "2ee12b1b0a279f62", "abcdef0123456789", "x_13800138000", "a-555-123-4567",
               "2026-10-31T09:00:05", "2026-12-07T16:58:54.544433+00:00", "2026-10-31T09:00:05Z", "_4111111111111111"]
    for text in skipped:
        assert _NO_MATCH(text) and r.text(text) == text == r._redact(text), text
    for text in ["13800138000a", "4111111111111111", "555-123-4567x", "4111111111111111_x", "ann@example.com",
                 "tel:+14155552671", "卡号4111111111111111"]:
        assert not _NO_MATCH(text) and r.text(text) != text, text  # each holds a match: the patterns decide
    rng = random.Random(21)
    alphabet = "0123456789" * 4 + "abcdefZ_-.:+@ T"
    tried = 0
    for _ in range(20_000):
        text = "".join(rng.choices(alphabet, k=rng.randint(1, 24)))
        if _NO_MATCH(text):
            tried += 1
            assert r._redact(text) == text, text
    assert tried > 1_000  # the check reached the shortcut often enough to mean something
