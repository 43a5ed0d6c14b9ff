from __future__ import annotations

import pytest
from graphql import build_schema, parse, validate

from miner import queries as Q
from miner.github_schema import QueryRejected, check_query
from tests.conftest import SHARED_SCHEMA


def _client_queries() -> list[tuple[str, dict]]:
    return [
        (Q.ISSUES, {"owner": "a", "name": "b", "first": Q.ISSUE_PAGE}),
        (Q.PULLS, {"owner": "a", "name": "b", "first": Q.PR_PAGE}),
        (Q.DISCUSSIONS, {"owner": "a", "name": "b", "first": Q.DISCUSSION_PAGE}),
        (Q.repo_meta_query([("a", "b")] * 100), {}),
        (Q.issue_comments_query("a", "b", [("issue", 1, "Y3Vyc29y"), ("pull_request", 2, "eA==")] * 50), {}),
        (Q.discussion_comments_query("a", "b", [(1, "eA==")] * 100), {}),
        (Q.replies_query([("DC_1", None), ("DC_2", "eA==")] * 50), {}),
        (Q.count_query("a", 'we"ird'), {}),
    ]


def test_client_queries_valid_against_shared_schema() -> None:
    schema = build_schema(SHARED_SCHEMA.read_text(encoding="utf-8"), assume_valid_sdl=True)
    schema._validation_errors = []
    for q, _v in _client_queries():
        assert validate(schema, parse(q)) == [], q[:80]


def test_every_client_query_costs_one_point() -> None:
    for q, v in _client_queries():
        _doc, cost = check_query(q, v)
        assert cost.points == 1, (q[:60], cost)


def test_cost_formula() -> None:
    q = "query($n:Int!){ repository(owner:\"a\",name:\"b\"){ issues(first:$n){ nodes{ comments(first:100){ totalCount } } } } }"
    assert check_query(q, {"n": 100})[1].requests == 101
    assert check_query(q, {"n": 100})[1].points == 1
    nested = ("{ repository(owner:\"a\",name:\"b\"){ discussions(first:40){ nodes{ comments(first:100){ nodes{"
              " replies(first:100){ totalCount } } } } } } }")
    cost = check_query(nested)[1]
    assert (cost.requests, cost.points, cost.nodes) == (1 + 40 + 4000, 40, 40 + 4000 + 400_000)
    with pytest.raises(QueryRejected, match="500,000"):
        check_query(nested.replace("first:40", "first:74"))
    assert check_query(Q.ISSUES, {"owner": "a", "name": "b", "first": 74})[1].points == 1  # 149 requests
    assert check_query(Q.ISSUES, {"owner": "a", "name": "b", "first": 75})[1].points == 2  # 151 requests
    assert check_query("{ rateLimit { cost } }")[1].points == 1


@pytest.mark.parametrize("bad", [
    "{ repository(owner:\"a\",name:\"b\"){ issues(first:101){ totalCount } } }",
    "{ repository(owner:\"a\",name:\"b\"){ issues(first:0){ totalCount } } }",
    "{ repository(owner:\"a\",name:\"b\"){ nosuchfield } }",
    "{ repository(owner:\"a\") { name } }",
    "{ repository(owner:\"a\",name:\"b\"){ issues(first:100){ nodes{ comments(first:100){ nodes{ reactions(first:100){ totalCount } } } } } } }",
    "{ unbalanced ",
])
def test_invalid_queries_rejected(bad: str) -> None:
    with pytest.raises(QueryRejected):
        check_query(bad)
