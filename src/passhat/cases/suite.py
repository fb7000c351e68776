"""A suite: a folder of case files plus the domains they use, with a content hash."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from passhat.cases.load import check_references, load_case
from passhat.cases.model import Case
from passhat.domain import BUILTIN_DOMAINS, Domain, load_domain, resolve_domain_ref
from passhat.errors import CaseError, DomainError
from passhat.inputs import special_kind

BUILTIN_ROOT = Path(__file__).resolve().parent.parent / "domains"


@dataclass
class Suite:
    """Cases (in file order by id), their files and domains."""

    name: str
    folder: Path
    cases: list[Case]
    files: dict[str, Path]
    domains: dict[str, Domain] = field(default_factory=dict)
    _index: dict[str, int] | None = field(default=None, init=False, repr=False, compare=False)

    def domain_of(self, case: Case) -> Domain:
        return self.domains[case.domain]

    def case(self, case_id: str) -> Case:
        """The case with this id (KeyError: none). Callers look cases up once per trial record, so this is an
        index of positions built on first use, not a scan of the suite (a scan made regrade quadratic in
        cases). Each answer is checked against the list as it is now, and the index rebuilt when the list
        changed under it (replaced, appended to, or a case replaced in place)."""
        for _ in range(2):
            if self._index is None:
                self._index = {}
                for i, c in enumerate(self.cases):
                    self._index.setdefault(c.id, i)  # the first of a repeated id wins, as a scan found it
            i = self._index.get(case_id, -1)
            if 0 <= i < len(self.cases) and self.cases[i].id == case_id:
                return self.cases[i]
            self._index = None  # missing, or the list changed: look again once, from the list as it is
        raise KeyError(case_id)

    def case_hashes(self) -> dict[str, str]:
        return {c.id: c.content_hash() for c in self.cases}

    def fixture_hashes(self) -> dict[str, dict[str, str]]:
        """Hash of each fixture's built state, per domain (so a change can be named down to the fixture)."""
        return {n: {f: d.fixture_hash(f) for f in d.fixture_names} for n, d in sorted(self.domains.items())}

    def domain_hashes(self) -> dict[str, str]:
        return {n: d.content_hash() for n, d in self.domains.items()}

    def content_hash(self) -> str:
        """Hash of the cases and the domain code, fixtures and policy they run against.

        Two runs are comparable only when this is equal (or, case by case, when the case hashes and
        domain hashes are).
        """
        return suite_hash(self.case_hashes(), self.domain_hashes())


def suite_hash(case_hashes: dict[str, str], domain_hashes: dict[str, str]) -> str:
    """:meth:`Suite.content_hash` from the suite's case and domain hashes, for a caller that needs those too (the
    manifest: each is a few ms, the domain's reading its tools' source)."""
    h = hashlib.sha256()
    for cid, ch in sorted(case_hashes.items()):
        h.update(f"{cid}:{ch}\n".encode())
    for name in sorted(domain_hashes):
        h.update(f"{name}:{domain_hashes[name]}\n".encode())
    return h.hexdigest()


def resolve_suite_folder(ref: str) -> tuple[str, Path]:
    """A built-in suite name or a folder path → (suite name, folder)."""
    if ref in BUILTIN_DOMAINS and not Path(ref).exists():
        return ref, BUILTIN_ROOT / ref / "cases"
    folder = Path(ref)
    if not folder.is_dir():
        raise CaseError(ref, "", f"not a built-in suite ({', '.join(BUILTIN_DOMAINS)}) nor a folder of case files")
    resolved = folder.resolve()
    # a suite laid out as NAME/cases/*.yaml is called NAME, not "cases"
    return (resolved.parent.name if resolved.name == "cases" else resolved.name), folder


def load_suite(ref: str) -> Suite:
    """Load and check every case of a suite; raises :class:`CaseError` on the first problem."""
    name, folder = resolve_suite_folder(ref)
    paths = sorted(p for p in folder.iterdir() if p.suffix in (".yaml", ".yml") and not p.is_dir())
    for path in paths:  # a FIFO, socket, device or dangling link named like a case is an error, never skipped
        if not path.is_file():
            what = "a dangling symbolic link" if not path.exists() else f"is {special_kind(path)}"
            raise CaseError(str(path), "", f"{what}; a case file must be a regular file")
    if not paths:
        raise CaseError(str(folder), "", "no case files (*.yaml) in this folder")
    cases: list[Case] = []
    files: dict[str, Path] = {}
    domains: dict[str, Domain] = {}
    loaded: dict[str, Domain] = {}  # by resolved reference: each domain (and so each fixture image) once
    for path in paths:
        case = load_case(path)
        if case.id in files:
            raise CaseError(str(path), "id", f"duplicate case id {case.id!r} (also in {files[case.id]})")
        if case.domain not in domains:
            try:
                key = resolve_domain_ref(case.domain, folder).key
                if key not in loaded:
                    loaded[key] = load_domain(case.domain, folder)
            except DomainError as exc:
                raise CaseError(str(path), "domain", str(exc)) from None
            domains[case.domain] = loaded[key]
        check_references(case, str(path), domains[case.domain])
        cases.append(case)
        files[case.id] = path
    return Suite(name, folder, cases, files, domains)
