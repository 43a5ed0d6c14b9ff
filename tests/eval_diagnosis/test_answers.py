"""Parsing free-text answers into ranked directions."""

from __future__ import annotations

from eval_diagnosis.answers import MAX_DIRECTIONS, parse_directions, render_directions


def test_numbered_lines_with_justifications_and_continuations() -> None:
    text = ("Here are the likely causes:\n1. **Warmup**: the paper used 4000 steps\n   and you used 400\n"
            "2) Batch size because you train on fewer GPUs\n(3) seed")
    dirs = parse_directions(text)
    assert [d.text for d in dirs] == ["Warmup", "Batch size", "seed"]
    assert dirs[0].justification == "the paper used 4000 steps and you used 400"
    assert dirs[0].justified and dirs[1].justified and not dirs[2].justified


def test_bullets_chinese_markers_and_think_blocks() -> None:
    assert [d.text for d in parse_directions("<think>lr? seed?</think>\n- a thing\n* another\n• third")] == [
        "a thing", "another", "third"]
    zh = parse_directions("一、学习率预热太短，因为论文用了4000步\n二、随机种子")
    assert len(zh) == 2 and zh[0].justified and not zh[1].justified


def test_unmarked_lines_are_directions_and_headers_dropped() -> None:
    dirs = parse_directions("Possible reasons:\nThe learning rate since the batch is smaller\n\nThe eval script")
    assert [d.text for d in dirs] == ["The learning rate", "The eval script"]
    assert dirs[0].justification == "the batch is smaller"


def test_empty_and_garbage() -> None:
    assert parse_directions("") == []
    assert parse_directions(None) == []
    assert parse_directions("  \n\n ") == []
    assert parse_directions("!!! ??? ...\n---") == []


def test_one_line_shopping_list_is_split() -> None:
    dirs = parse_directions("It could be the learning rate, data preprocessing, the eval script or the seed.")
    assert len(dirs) >= 4


def test_cap_and_render_roundtrip() -> None:
    many = "\n".join(f"{i}. direction {i}" for i in range(1, 60))
    assert len(parse_directions(many)) == MAX_DIRECTIONS
    text = render_directions([("warmup", "because it is short"), ("seed", None)])
    assert [(d.text, d.justification) for d in parse_directions(text)] == [("warmup", "because it is short"),
                                                                           ("seed", None)]
