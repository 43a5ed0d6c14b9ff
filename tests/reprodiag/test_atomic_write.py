"""Files written whole or not at all."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprodiag.atomic_write import replacing, write_text
from reprodiag.errors import UserError


def test_the_old_file_stays_whole_when_the_writer_fails(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n", encoding="utf-8")
    with pytest.raises(RuntimeError), replacing(path) as fh:
        fh.write("half a new fi")
        raise RuntimeError("killed mid-write")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]  # no temporary file left behind


def test_a_clean_block_replaces_the_file(tmp_path: Path) -> None:
    path = tmp_path / "out.jsonl"
    path.write_text("old\n", encoding="utf-8")
    with replacing(path) as fh:
        fh.write("naïve – 新\n")
    assert path.read_text(encoding="utf-8") == "naïve – 新\n"
    write_text(path, "")
    assert path.read_text(encoding="utf-8") == "" and sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def test_an_unwritable_place_is_a_one_line_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder" / "out.json"
    with pytest.raises(UserError, match=r"^cannot write .*out\.json: ") as err:
        write_text(missing, "{}")
    assert "\n" not in str(err.value) and not missing.parent.exists()
    (tmp_path / "a-dir").mkdir()
    with pytest.raises(UserError, match="cannot write"):
        write_text(tmp_path / "a-dir", "{}")
    assert (tmp_path / "a-dir").is_dir()
