"""Writing a benchmark's stored RESULT (``bench/out/*.json``): one place for it."""
from __future__ import annotations

import json
from pathlib import Path


def store(path: Path | str, result: dict) -> Path:
    """Write ``result`` as indented JSON to ``path``, creating its folder: first to a
    ``.part`` sibling, then renamed over ``path``, so an interrupted run (a full disk, a
    kill) never leaves a half-written results file that the docs' tests would read."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    try:
        tmp.write_text(json.dumps(result, indent=1) + "\n")
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)   # gone after the rename; removed if the write failed
    return path
