"""The sandbox hides the temporary folder yet keeps a virtual environment inside it usable.

CI and many users run passhat from a venv made in /tmp. Its ``bin/python`` is a link out of it, and the
sandbox's helper runs with ``-I -S`` (its ``sys.prefix`` is the base interpreter's), so the venv has to be
found from the path as called. It is bound back read-only; the rest of /tmp (sibling copies) stays hidden.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from passhat.sandbox import plan as init


def test_a_venv_in_the_temp_folder_is_kept_and_the_folder_still_hidden(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    os.symlink(sys.executable, venv / "bin" / "python")
    monkeypatch.setattr(init.sys, "executable", str(venv / "bin" / "python"))
    copy = str(tmp_path / "passhat-ws-1")
    assert init.hidden_parents([copy]) == [str(tmp_path)]  # siblings of the copy are hidden
    assert str(venv) in init.kept_inside(init.covers([copy]))  # and the venv bound back


def test_an_interpreter_installed_right_in_the_folder_keeps_it_visible(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(init.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setattr(init.sys, "prefix", str(tmp_path))
    assert init.hidden_parents([str(tmp_path / "passhat-ws-1")]) == []  # documented: nothing to hide it from
