"""Pre-registration: the gate is recorded in the manifest before the first trial, and later checked.

``passhat run --gate FILE`` stores the file's path, the sha256 of its bytes and its parsed rules in
the manifest that the runner writes before any trial starts. ``passhat gate`` then refuses a gate
file whose bytes differ (moving the goalposts after seeing a 78 %), unless the user explicitly
allows it — and that override is written into ``gate.json`` and printed, never silent.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from passhat.gate.load import GateError, LoadedGate, load_gate
from passhat.gate.schema import GateFile
from passhat.models import GateInfo, GateOverride, GateRegistration, Manifest


def registration(loaded: LoadedGate) -> GateRegistration:
    """The manifest's ``gate`` entry for a gate file."""
    return GateRegistration(path=str(loaded.path.resolve()), sha256=loaded.sha256, name=loaded.gate.name,
                            registered_at=datetime.now(UTC).isoformat(), gate=loaded.gate.model_dump(mode="json"))


def registration_for_run(gate_path: Path | None, old_manifest: Manifest | None) -> GateRegistration | None:
    """The gate entry for a new run, or for a resumed one (``old_manifest``), which keeps its registration.

    A resumed run cannot gain a gate (trials already ran before it was registered) nor swap its gate.
    """
    if old_manifest is None:
        return registration(load_gate(gate_path)) if gate_path is not None else None
    old = old_manifest.gate
    if gate_path is None:
        return old
    loaded = load_gate(gate_path)
    if old is None:
        raise GateError(str(gate_path), "", "cannot register a gate when resuming: trials already ran without one. "
                        "Evaluate it afterwards with `passhat gate RUN --gate FILE` (reported as not pre-registered)")
    if old.sha256 != loaded.sha256:
        raise GateError(str(gate_path), "", f"differs from the gate registered when this run started "
                        f"({old.path}, sha256 {old.sha256[:12]}…); a run keeps the gate it started with")
    return old


@dataclass(frozen=True)
class ResolvedGate:
    """The gate to evaluate and how it relates to the registered one (the ``gate`` block of gate.json)."""

    gate: GateFile
    path: Path
    info: GateInfo


def resolve_gate(manifest: Manifest, gate_path: Path | None, *, allow_gate_change: bool,
                 manifest_path: str = "manifest.json") -> ResolvedGate:
    """Pick the gate for ``passhat gate``: the registered one, a matching file, or an allowed, recorded change."""
    registered = manifest.gate
    if registered is None:
        if gate_path is None:
            raise GateError(manifest_path, "gate", "this run has no registered gate; pass --gate FILE "
                            "(it will be reported as not pre-registered)")
        loaded = load_gate(gate_path)
        return ResolvedGate(loaded.gate, loaded.path, _info(loaded, None, preregistered=False))
    path = gate_path if gate_path is not None else Path(registered.path)
    if gate_path is None and not path.exists():
        # The file is gone, but its parsed rules were recorded before the first trial: use those.
        try:
            gate = GateFile.model_validate(registered.gate)
        except ValidationError as exc:
            raise GateError(manifest_path, "gate.gate", f"recorded gate is unreadable: {exc}") from None
        info = GateInfo(name=gate.name, alpha=gate.alpha, path=registered.path, sha256=registered.sha256,
                        source="manifest", preregistered=True, registered=_brief(registered), override=None)
        return ResolvedGate(gate, path, info)
    loaded = load_gate(path)
    if loaded.sha256 == registered.sha256:
        return ResolvedGate(loaded.gate, loaded.path, _info(loaded, registered, preregistered=True))
    other = Path(path).resolve() != Path(registered.path).resolve()  # --gate names another file than the registered
    if not allow_gate_change:
        what = (f"this is not the gate registered for this run ({registered.path}, registered "
                f"{registered.registered_at} with sha256 {registered.sha256[:12]}…; this file's is {loaded.sha256[:12]}…). "
                "Choosing another gate after seeing results" if other else
                f"this gate file changed after the run started (registered {registered.registered_at} with sha256 "
                f"{registered.sha256[:12]}…, now {loaded.sha256[:12]}…). Changing the bar after seeing results")
        raise GateError(str(path), "", (
            f"{what} (moving the goalposts) is refused; pass --allow-gate-change to evaluate it anyway — the override "
            "is recorded in gate.json and reported"))
    info = _info(loaded, registered, preregistered=False)
    why = (f"a gate other than the registered {registered.path}" if other
           else "gate file changed after the run started")
    info.override = GateOverride(allowed_gate_change=True, at=datetime.now(UTC).isoformat(),
                                 registered_sha256=registered.sha256, used_sha256=loaded.sha256,
                                 message=f"{why}; evaluated anyway (--allow-gate-change)")
    return ResolvedGate(loaded.gate, loaded.path, info)


def _brief(registered: GateRegistration) -> GateRegistration:
    """The registration without its rules (gate.json names it; the rules are the gate evaluated)."""
    return GateRegistration(path=registered.path, sha256=registered.sha256, registered_at=registered.registered_at)


def _info(loaded: LoadedGate, registered: GateRegistration | None, *, preregistered: bool) -> GateInfo:
    return GateInfo(name=loaded.gate.name, alpha=loaded.gate.alpha, path=str(loaded.path), sha256=loaded.sha256,
                    source="file", preregistered=preregistered,
                    registered=_brief(registered) if registered else None, override=None)
