"""Redaction time versus text size: 100 KB and 1 MB of adversarial and of realistic text.

Redaction runs on every string of every trial record before it is written, so a reply of a megabyte
must cost milliseconds, not minutes: the time must grow linearly with the text. The adversarial
inputs are the shapes that make backtracking patterns quadratic (one long token-like run, a long digit
run, digit groups, ``+1`` repeated, ``@`` without a domain, dotted words); the realistic text is
record-like prose with amounts, dates, IDs, floats, e-mail addresses, phone and card numbers. Prints
seconds per input and the 1 MB / 100 KB ratio (10 means linear). Run: ``python bench/bench_redaction.py``.
"""

from __future__ import annotations

import argparse
import random
import time

from passhat.redaction import Redactor

KB = 1024


def adversarial(size: int) -> dict[str, str]:
    """Inputs a backtracking pattern would rescan from every position."""
    return {
        "token run (a…)": "a" * size,
        "digit run (1…)": "1" * size,
        "digit groups (1111 …)": ("1111 " * (size // 5 + 1))[:size],
        "spaced digits (1 1 …)": ("1 " * (size // 2 + 1))[:size],
        "plus-digits (+1+1…)": ("+1" * (size // 2 + 1))[:size],
        "token run then @": "a" * (size - 1) + "@",
        "dotted words (a.a.…@)": ("a." * (size // 2))[: size - 1] + "@",
        "@ separated (a@a@…)": ("a@" * (size // 2 + 1))[:size],
    }


def realistic(size: int, seed: int = 0) -> str:
    """Record-like text: what tool results, replies and grade reasons look like, PII included."""
    rng = random.Random(seed)
    parts = []
    n = 0
    while n < size:
        amount = rng.uniform(1, 999)
        piece = rng.choice([
            f"Refunded {amount:.2f} USD for order {rng.randrange(1000, 9999)} on 2026-10-{rng.randrange(10, 31)}. ",
            f"net change of ledger.amount: expected {-amount:.1f}, actual {-amount + 0.1 + 1e-14!r} ",
            f"Contact mei.chen{rng.randrange(100)}@example.com or +86 138 0013 {rng.randrange(1000, 9999)}. ",
            "Card 4111 1111 1111 1111 was charged; phone (555) 123-4567. ",
            f'{{"ticket_id": "R-{rng.randrange(10000, 99999)}", "invoice_id": "INV-{rng.randrange(100, 999)}", '
            f'"amount": {amount:.2f}, "status": "awaiting_manager_approval"}} ',
            f"trace {rng.getrandbits(128):032x} span {rng.getrandbits(64):016x} at {time.time():.6f}s ",
            "The policy says local transport is capped at 80 CNY per day; the rest needs the manager's approval. ",
        ])
        parts.append(piece)
        n += len(piece)
    return "".join(parts)[:size]


def seconds(redactor: Redactor, text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        redactor.text(text)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=100, help="small size in KB (default 100)")
    parser.add_argument("--large", type=int, default=1024, help="large size in KB (default 1024 = 1 MB)")
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings (default 3)")
    args = parser.parse_args()
    r = Redactor()
    small, large = args.small * KB, args.large * KB
    rows = [(name, text, adversarial(large)[name]) for name, text in adversarial(small).items()]
    rows.append(("realistic records", realistic(small), realistic(large)))
    print(f"{'input':<26} {args.small:>6} KB s {args.large:>7} KB s  ratio")
    worst = 0.0
    for name, a, b in rows:
        ta, tb = seconds(r, a, args.repeat), seconds(r, b, args.repeat)
        worst = max(worst, tb)
        print(f"{name:<26} {ta:>11.4f} {tb:>12.4f}  {tb / ta if ta else float('nan'):5.1f}")
    print(f"slowest {args.large} KB input: {worst:.3f} s (linear: ratio ≈ {large / small:.0f})")


if __name__ == "__main__":
    main()
