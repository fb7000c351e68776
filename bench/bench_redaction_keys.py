"""Redacting dict keys: CPU time for 1,000 … 100,000 e-mail keys, and the ratio per tenfold (linear: ~10).

Issue 25 item 5: keys that redact alike were numbered by a scan from ``#2`` each time (quadratic: 10,000
keys took 29 s). Run: ``python bench/bench_redaction_keys.py``.
"""

from __future__ import annotations

import time

from passhat.redaction import Redactor


def main() -> None:
    redactor = Redactor()
    previous = None
    for n in (1_000, 10_000, 100_000):
        data = {f"user{i}@example.com": i for i in range(n)}
        started = time.process_time()
        redactor.value(data)
        spent = time.process_time() - started
        ratio = f"{spent / previous:5.1f}× the previous" if previous else ""
        print(f"{n:>7,} e-mail keys: {spent * 1000:8.1f} ms CPU  {ratio}")
        previous = spent


if __name__ == "__main__":
    main()
