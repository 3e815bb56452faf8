"""The one results schema (`records`): JSON lines in `results/<run-id>.jsonl`."""
