"""The one results schema: JSON lines in `results/<run-id>.jsonl`.

A file holds, one JSON object per line, each with `"type"` and `"schema"` keys:

- a `run` record (`records.RunRecord`): when, where and with what software the run
  happened, and a fingerprint of the hardware/software part. It may be written again
  later in the file (for instance once peaks are measured); the last one wins.
- `measurement` records (`records.Measurement`), one per (suite, workload, params,
  backend, device, dtype), appended, flushed and fsynced as each is measured. A later
  record with the same key replaces an earlier one.
- `end` records: when the run (or a resumed part of it) stopped and whether it completed.

The modules, one idea each: `records` (the records and their keys), `validation` (JSON
values checked against the records' field types), `environment` (the machine and
software a new run describes), `files` (writing and reading results files), `lock` (one
writer per results file) and `pytest_benchmark` (pytest-benchmark JSON read as results).
"""
