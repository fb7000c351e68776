"""``passhat init``: a starter suite (domain, fixture, policy, cases, agent) that runs as written."""

from __future__ import annotations

import shutil
from pathlib import Path

from passhat.errors import PasshatError

TEMPLATE = Path(__file__).parent / "template"


def create_suite(folder: Path, *, force: bool = False) -> list[Path]:
    """Copy the starter suite into ``folder`` (refusing to overwrite files unless ``force``)."""
    files = sorted(p for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
    targets = [folder / p.relative_to(TEMPLATE) for p in files]
    clashes = [t for t in targets if t.exists()]
    if clashes and not force:
        raise PasshatError(f"{folder} already has {', '.join(str(c.relative_to(folder)) for c in clashes[:5])}; "
                           "choose an empty folder or pass --force")
    for src, dst in zip(files, targets, strict=True):
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
    return targets
