"""Near-duplicate requests: the rewrites that leak a holdout answer into development.

Two requests (a case's hidden goal, or its instruction when it has none) are compared after
normalisation (Unicode NFKC, lower case, punctuation dropped, spaces collapsed) by two measures, and the
larger counts: the Jaccard overlap of their token sets (words; each CJK character is a token, since
Chinese has no spaces) catches reordered rewrites, and difflib's ratio catches near-identical strings
that differ in a number or a word. 0.85 by default.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher

THRESHOLD = 0.85
_TOKEN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]|[^\W_]+")


def normalise(text: str) -> str:
    """Lower-cased NFKC text with punctuation removed and whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).lower()
    return " ".join(re.sub(r"[\W_]+", " ", text).split())


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(normalise(text)))


def jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


def similarity(a: str, b: str) -> float:
    """max(token Jaccard, difflib ratio) of the normalised texts, in [0, 1]."""
    na, nb = normalise(a), normalise(b)
    j = jaccard(tokens(a), tokens(b))
    m = SequenceMatcher(None, na, nb, autojunk=False)
    return max(j, m.ratio())


def similar(a: str, b: str, threshold: float = THRESHOLD) -> float | None:
    """The similarity if it reaches ``threshold`` (cheap upper bounds first), else ``None``."""
    na, nb = normalise(a), normalise(b)
    j = jaccard(tokens(a), tokens(b))
    if j >= threshold:
        return max(j, SequenceMatcher(None, na, nb, autojunk=False).ratio())
    m = SequenceMatcher(None, na, nb, autojunk=False)
    if m.real_quick_ratio() < threshold or m.quick_ratio() < threshold:
        return None
    r = m.ratio()
    return r if r >= threshold else None
