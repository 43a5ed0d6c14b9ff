from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from reprodiag.schema import (
    Comment,
    Evidence,
    Hypothesis,
    Record,
    SchemaError,
    Symptom,
    Thread,
    Verdict,
    parse_record,
    parse_thread,
)


def make_thread(**over) -> dict:
    doc = {
        "repo": "lab/model",
        "number": 7,
        "kind": "issue",
        "url": "https://github.com/lab/model/issues/7",
        "title": "Cannot reach 81.8 top-1",
        "body": "Paper reports 81.8, I get 79.8.",
        "author": "alice",
        "author_association": "NONE",
        "state": "closed",
        "state_reason": "COMPLETED",
        "created_at": "2023-01-02T03:04:05Z",
        "updated_at": "2023-01-05T00:00:00Z",
        "closed_at": "2023-01-05T00:00:00Z",
        "labels": ["question"],
        "reactions": 3,
        "category": None,
        "answer_id": None,
        "comments": [
            {"id": "IC_1", "author": "bob", "author_association": "OWNER", "body": "Scale the LR.",
             "created_at": "2023-01-03T00:00:00Z", "reactions": 1, "is_answer": False, "replies": []}
        ],
    }
    doc.update(over)
    return doc


def test_thread_json_round_trip_is_exact():
    t = parse_thread(make_thread())
    dumped = t.model_dump(mode="json")
    assert Thread.model_validate(dumped) == t
    assert dumped["created_at"] == "2023-01-02T03:04:05Z"
    assert json.loads(json.dumps(dumped)) == dumped


def test_thread_ids_for_issue_and_discussion():
    assert parse_thread(make_thread()).id == "lab/model#7"
    d = parse_thread(make_thread(kind="discussion", number=3, category="Q&A", answer_id="DC_1"))
    assert d.id == "lab/model#d3"


def test_discussion_replies_flatten_in_reading_order():
    reply = {"id": "DC_2", "author": "c", "body": "r", "created_at": "2023-01-04T00:00:00Z"}
    top = {"id": "DC_1", "author": "b", "body": "a", "created_at": "2023-01-03T00:00:00Z", "replies": [reply]}
    t = parse_thread(make_thread(kind="discussion", comments=[top, {**top, "id": "DC_3", "replies": []}]))
    assert [c.id for c in t.all_comments()] == ["DC_1", "DC_2", "DC_3"]


def test_unknown_enum_value_names_field_and_thread():
    with pytest.raises(SchemaError) as err:
        parse_thread(make_thread(kind="gist"))
    msg = str(err.value)
    assert "lab/model#7" in msg and "'kind'" in msg and "\n" not in msg


def test_nested_error_names_dotted_path():
    bad = make_thread()
    bad["comments"][0]["created_at"] = "yesterday"
    with pytest.raises(SchemaError, match=r"comments\.0\.created_at"):
        parse_thread(bad)


def test_unknown_field_rejected_and_non_object_rejected():
    with pytest.raises(SchemaError, match="surprise"):
        parse_thread(make_thread(surprise=1))
    with pytest.raises(SchemaError, match="expected a JSON object"):
        parse_thread([1, 2])


def test_bad_repo_shape_rejected():
    with pytest.raises(SchemaError, match="owner/name"):
        parse_thread(make_thread(repo="justname"))


def test_null_bodies_become_empty_and_unicode_survives():
    odd = "零宽\u200b字符 \U0001f600 \u202e RTL \x00nul"
    t = parse_thread(make_thread(body=None, title=odd))
    assert t.body == "" and t.title == odd
    assert Thread.model_validate_json(t.model_dump_json()).title == odd


def test_naive_datetime_is_taken_as_utc():
    t = parse_thread(make_thread(created_at="2023-01-02T03:04:05"))
    assert t.created_at.utcoffset().total_seconds() == 0


def test_content_hash_ignores_key_order_but_not_content():
    a = parse_thread(make_thread())
    b = parse_thread(dict(reversed(list(make_thread().items()))))
    c = parse_thread(make_thread(body="different"))
    assert a.content_hash() == b.content_hash() != c.content_hash()


def test_record_round_trip_with_nested_models():
    r = Record(
        thread_id="lab/model#7",
        repo="lab/model",
        error_type="hyperparameter",
        symptom=Symptom(metric="top-1", paper_value=81.8, obtained_value=79.8, gap=-2.0),
        hypothesis_chain=[Hypothesis(text="scale lr", comment_id="IC_1", outcome="confirmed")],
        evidence=[Evidence(field="symptom", comment_id=None, quote="Paper reports 81.8")],
        replay=Verdict(case_id="c", verdict="confirmed"),
    )
    assert Record.model_validate(r.model_dump(mode="json")) == r


def test_record_errors_name_the_thread():
    with pytest.raises(SchemaError) as err:
        parse_record({"thread_id": "a/b#1", "repo": "a/b", "error_type": "cosmic_rays"})
    assert "a/b#1" in str(err.value) and "error_type" in str(err.value)


def test_models_are_frozen():
    c = Comment(id="x", created_at="2020-01-01T00:00:00Z")
    with pytest.raises(ValidationError):
        c.body = "changed"  # type: ignore[misc]
