"""Measurements of the vendor's own hardware, which override the estimate for that exact setup.

`sizing calibrate add` appends one (from a `sizing loadtest --json` report or from figures typed
in, e.g. read off vLLM's log lines) to tools/data/perf_measured.json, or to a file of your own.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError

from tools.errors import InvalidInputError
from tools.schemas import Measurement

MEASURED_FILE = Path(__file__).parent / "data" / "perf_measured.json"


def load_measurements(path: Path | str | None = None) -> list[Measurement]:
    """Every measurement in the file; a missing file holds none."""
    file = Path(path) if path else MEASURED_FILE
    if not file.exists():
        return []
    try:
        rows = json.loads(file.read_text(encoding="utf-8")).get("measurements", [])
        return [Measurement.model_validate(row) for row in rows]
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, AttributeError, ValidationError) as exc:
        raise InvalidInputError(
            f"measurements file {str(file)!r} is not readable: {exc.__class__.__name__}"
        ) from None


def add_measurement(measurement: Measurement, path: Path | str | None = None) -> Path:
    """Append a measurement (stamped with today's date when it has none); returns the file."""
    file = Path(path) if path else MEASURED_FILE
    existing = load_measurements(file)
    stamped = (
        measurement
        if measurement.recorded
        else measurement.model_copy(update={"recorded": datetime.now(UTC).date().isoformat()})
    )
    doc = {
        "about": "Measurements of the vendor's own hardware (sizing calibrate add). Each overrides the "
        "serving estimate for its exact setup and scales it for other loads of that setup.",
        "measurements": [m.model_dump(mode="json") for m in [*existing, stamped]],
    }
    file.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return file
