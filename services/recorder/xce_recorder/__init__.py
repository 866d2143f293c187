"""Recorder service: the ordered recording of the live stream into Redis, export to JSONL."""
