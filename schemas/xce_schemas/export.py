"""Export the wire contract as JSON Schema files under ``schemas/json/``.

Run ``python -m xce_schemas.export [DIR]`` after changing a model; a test fails when
the committed files drift from the models.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from xce_schemas.alloc import JobAlloc
from xce_schemas.bus import CoreCheckpoint, DeadLetter, EventBatch
from xce_schemas.controller import JobsSubmit
from xce_schemas.decisions import Decision
from xce_schemas.events import CoreEvent
from xce_schemas.pending import PendingReason
from xce_schemas.recording import RecordingLine
from xce_schemas.snapshot import CoreSnapshot
from xce_schemas.workload import WorkloadJob

#: File name → the type it documents.
EXPORTED: dict[str, Any] = {
    "controller_jobs.schema.json": JobsSubmit,
    "core_checkpoint.schema.json": CoreCheckpoint,
    "core_event.schema.json": CoreEvent,
    "core_snapshot.schema.json": CoreSnapshot,
    "dead_letter.schema.json": DeadLetter,
    "decision.schema.json": Decision,
    "event_batch.schema.json": EventBatch,
    "job_alloc.schema.json": JobAlloc,
    "pending_reason.schema.json": PendingReason,
    "recording_line.schema.json": RecordingLine,
    "workload_job.schema.json": WorkloadJob,
}


def schema_texts() -> dict[str, str]:
    """File name → JSON Schema text (sorted keys, two-space indent, final newline)."""
    texts: dict[str, str] = {}
    for filename, model in EXPORTED.items():
        schema = TypeAdapter(model).json_schema(mode="serialization", by_alias=True)
        texts[filename] = json.dumps(schema, indent=2, sort_keys=True) + "\n"
    return texts


def main(argv: list[str] | None = None) -> int:
    """Write every schema file into ``argv[0]`` (default: ``schemas/json``)."""
    args = sys.argv[1:] if argv is None else argv
    target = Path(args[0]) if args else Path(__file__).resolve().parent.parent / "json"
    target.mkdir(parents=True, exist_ok=True)
    for filename, text in schema_texts().items():
        (target / filename).write_text(text, encoding="utf-8")
        print(f"wrote {target / filename}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
