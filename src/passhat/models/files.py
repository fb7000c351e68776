"""The four JSON files passhat writes (manifest, summary, gate result, comparison) as versioned models.

Each file is the JSON dump of its model and is read back through it. ``schema_version`` names the file
kind and its version (``passhat.summary/3``); a file of another kind, or of a version this passhat does
not read, is refused with an error naming the file, the version found and the one expected, never read
half-understood. Dumps hold the fields that were set (``exclude_unset``): a file read and written back
is unchanged. Every reader reads the model's attributes, never the JSON by key (docs/design/030;
``tests/models/run_file_reads.py`` holds the count of such reads outside the models at zero).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

import passhat._docstrings  # noqa: F401  (field docstrings read once per module: before the models)
from passhat.errors import RunError
from passhat.models.finite import STRICT_FLOATS, check_json_text


class FileFormatError(RunError):
    """A passhat file is not valid JSON, or does not match its model (a field is missing or malformed)."""


class SchemaVersionError(FileFormatError):
    """A passhat file is of another kind, or of a schema version this passhat does not read."""

    def __init__(self, file: str, found: str | None, expected: str, remedy: str = "") -> None:
        self.file, self.found, self.expected = file, found, expected
        super().__init__(_version_message(file, found, expected, remedy))


def _split(version: str) -> tuple[str, int | None]:
    kind, _, number = version.rpartition("/")
    return (kind, int(number)) if number.isdigit() and kind else (version, None)


def _version_message(file: str, found: str | None, expected: str, remedy: str) -> str:
    kind, want = _split(expected)
    if found is None:
        what = f"has no schema_version; this passhat reads {expected}"
    else:
        found_kind, number = _split(found)
        if found_kind != kind:
            what = f"is a {found!r} file, not {kind} (expected schema_version {expected})"
        elif number is not None and want is not None and number < want:
            what = f"has schema_version {found}, older than the {expected} this passhat reads"
        elif number is not None and want is not None and number > want:
            what = (f"has schema_version {found}, newer than the {expected} this passhat reads; "
                    "upgrade passhat to read it")
        else:
            what = f"has schema_version {found!r}; this passhat reads {expected}"
    return f"{file}: {what}" + (f"; {remedy}" if remedy else "")


def _bytes(raw: bytes | str) -> bytes:
    return raw if isinstance(raw, bytes) else raw.encode("utf-8")


def write_text_atomic(path: Path, text: str) -> None:
    """Write to a temporary file and rename it into place: readers never see half a file.

    A failure names ``path``, the file the user knows, not the temporary one, and leaves no temporary behind
    (``summary.json`` being a folder was reported as ``summary.json.tmp: Is a directory``)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with tmp.open("w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OSError(exc.errno, exc.strerror, str(path)) from None


class FileModel(BaseModel):
    """Base of the models that are files: a ``schema_version`` checked on every read."""

    model_config = ConfigDict(use_attribute_docstrings=True, ser_json_inf_nan=STRICT_FLOATS)

    UNVERSIONED_IS_CURRENT: ClassVar[bool] = True
    """A file without ``schema_version`` was written before versions were recorded; when its shape is the
    current one (every kind but the summary), it is read as the current version."""
    REMEDY: ClassVar[str] = ""
    """What to do about a file of another version (appended to the error)."""

    schema_version: str
    """Which file this is and in which version of its format: ``passhat.KIND/N`` (each subclass fixes it)."""

    @classmethod
    def schema_id(cls) -> str:
        """The schema version this passhat writes and reads, e.g. ``passhat.summary/3``."""
        default: str = cls.model_fields["schema_version"].default
        return default

    def model_post_init(self, context: Any, /) -> None:
        self.model_fields_set.add("schema_version")  # always written, even when defaulted

    @classmethod
    def check_version(cls, data: Any, source: str) -> dict[str, Any]:
        """``data`` as a mapping of the current version; raises :class:`SchemaVersionError` otherwise."""
        if not isinstance(data, dict):
            raise FileFormatError(f"{source}: expected a JSON object, found {type(data).__name__}")
        found = data.get("schema_version")
        if found is None and cls.UNVERSIONED_IS_CURRENT:
            return {**data, "schema_version": cls.schema_id()}
        if found != cls.schema_id():
            legacy = data.get("format") if found is None else None  # summaries before versions: "format"
            raise SchemaVersionError(source, legacy if isinstance(legacy, str) else found, cls.schema_id(), cls.REMEDY)
        return data

    @classmethod
    def from_dict(cls, data: Any, source: str | None = None) -> Self:
        """Validate a mapping (a file's parsed JSON, or a dict built in memory); errors name ``source``."""
        where = source or cls.schema_id()
        data = cls.check_version(data, where)
        try:
            model = cls.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise FileFormatError(f"{where}: {field}: {first['msg']} (not a valid {cls.schema_id()} file)") from None
        return model

    @classmethod
    def from_json(cls, raw: bytes | str, source: str) -> Self:
        """Validate a file's bytes. A file as passhat writes it, starting with the current version, is
        validated straight from its bytes (a 19 MB summary in 0.2 s of CPU, without building dicts first);
        any other, and one that fails, goes through :meth:`from_dict`, whose error names the version found
        or the first bad field."""
        data = _bytes(raw)
        if data.startswith(cls._written_prefix()):
            try:
                return cls.model_validate_json(data)
            except ValidationError:
                pass  # from_dict says which field
        try:
            parsed = json.loads(data)
        except ValueError as exc:
            raise FileFormatError(f"{source}: not valid JSON ({exc})") from None
        return cls.from_dict(parsed, source)

    @classmethod
    def _written_prefix(cls) -> bytes:
        """How a file :meth:`dump` wrote starts: its version first."""
        return ('{\n  "schema_version": "' + cls.schema_id() + '"').encode()

    @classmethod
    def load(cls, path: Path | str) -> Self:
        """Read a file through the model; a missing file raises ``FileNotFoundError``."""
        path = Path(path)
        return cls.from_json(path.read_bytes(), str(path))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready mapping that is written to disk (``json.loads`` of the file)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def to_json(self) -> str:
        """The file's text; a NaN or infinite number in it is refused (``models.finite``), never written."""
        text = self.model_dump_json(indent=2, exclude_unset=True) + "\n"
        return check_json_text(text, self.to_dict, self.schema_id())

    def dump(self, path: Path | str) -> Path:
        """Write the file atomically (never half a file); returns its path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, self.to_json())
        return path
