"""Export of run data to other tools: OpenTelemetry traces over OTLP/HTTP (``passhat[otel]`` extra), or as
OTLP/JSON files (no extra needed).

Reads run folders through the run store only; nothing in the harness imports this package, and the
OpenTelemetry packages are imported when an export is made, never at import time.
"""

from passhat.export.otlp import (
    ExportError,
    ExportStats,
    export_records,
    export_run,
    otlp_json,
    traces_endpoint,
    write_run_json,
)

__all__ = ["ExportError", "ExportStats", "export_records", "export_run", "otlp_json", "traces_endpoint", "write_run_json"]
