"""Recording names are single file names in one directory: nothing else gets through."""

from __future__ import annotations

from pathlib import Path

import pytest
from xce_admin.backend import RecordingsDir
from xce_schemas.admin import MAX_NAME_LENGTH, RecordingNameError, recording_key, recording_name


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("night", "night.jsonl.gz"),
        ("night.jsonl", "night.jsonl"),
        ("night.jsonl.gz", "night.jsonl.gz"),
        ("kth_2024-05-01.v2", "kth_2024-05-01.v2.jsonl.gz"),
        ("0", "0.jsonl.gz"),
    ],
    ids=[
        "bare name gets .jsonl.gz",
        "jsonl kept",
        "jsonl.gz kept",
        "dots, dashes, underscores",
        "one digit",
    ],
)
def test_accepted_names(name: str, expected: str) -> None:
    assert recording_name(name) == expected


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "cannot be empty"),
        ("../x", "is a path"),
        ("..", "contains '..'"),
        ("a..b", "contains '..'"),
        ("/etc/passwd", "is a path"),
        ("sub/dir.jsonl", "is a path"),
        ("..\\x", "is a path"),
        (".hidden", "must start with a letter or digit"),
        ("-rf", "must start with a letter or digit"),
        ("a b", "must start with a letter or digit"),
        ("x\x00y", "must start with a letter or digit"),
        ("x\ny", "must start with a letter or digit"),
        ("night\n", "must start with a letter or digit"),
        ("night.jsonl\n", "must start with a letter or digit"),
        ("caf\u00e9", "must start with a letter or digit"),
        ("~root", "must start with a letter or digit"),
        ("$HOME", "must start with a letter or digit"),
        ("a" * MAX_NAME_LENGTH, "characters long"),
    ],
    ids=[
        "empty",
        "parent path",
        "dot dot",
        "dot dot inside",
        "absolute path",
        "sub folder",
        "backslash path",
        "hidden file",
        "option-like",
        "space",
        "NUL byte",
        "newline",
        "final newline (re.match with $ let it through)",
        "final newline after the suffix",
        "non-ASCII",
        "tilde",
        "shell variable",
        "too long once suffixed",
    ],
)
def test_refused_names(name: str, why: str) -> None:
    with pytest.raises(RecordingNameError, match=why.replace("(", r"\(").replace(".", r"\.")):
        recording_name(name)


def test_the_redis_key_uses_the_checked_name() -> None:
    assert recording_key("night") == "xce:recording:night.jsonl.gz"
    with pytest.raises(RecordingNameError):
        recording_key("../night")


def test_the_directory_serves_only_its_own_recordings(tmp_path: Path) -> None:
    folder = tmp_path / "recordings"
    folder.mkdir()
    (folder / "a.jsonl").write_text("{}\n")
    (folder / "b.jsonl.gz").write_bytes(b"")
    (folder / "notes.txt").write_text("not a recording")
    (folder / ".part.c.jsonl.gz").write_bytes(b"")  # an export in progress
    (folder / "dir.jsonl").mkdir()
    (tmp_path / "secret.jsonl").write_text("outside\n")
    recordings = RecordingsDir(folder)
    assert [r.name for r in recordings.list()] == ["a.jsonl", "b.jsonl.gz"]
    assert recordings.file("a.jsonl") == folder / "a.jsonl"
    assert recordings.file("missing.jsonl") is None
    assert recordings.file("dir.jsonl") is None
    for bad in ("../secret.jsonl", str(tmp_path / "secret.jsonl"), ".part.c.jsonl.gz"):
        with pytest.raises(RecordingNameError):
            recordings.file(bad)
    with pytest.raises(RecordingNameError, match=r"must end in \.jsonl or \.jsonl\.gz"):
        recordings.file("notes.txt")
    assert RecordingsDir(tmp_path / "none").list() == []
