from __future__ import annotations

import random

import pytest
from graphql import build_schema, parse, validate

from miner import queries as Q
from miner.github_schema import QueryRejected, check_query
from tests.conftest import SHARED_SCHEMA


def _full_plan() -> Q.Plan:
    """Every kind of item the miner sends, with odd names and cursors, at exactly 149 requests."""
    fills = tuple(Q.Fill(k, i, Q.Page() if i % 3 else None, Q.Page("eA==" if i % 2 else None, 100 - i % 7),
                         Q.TailPage("eQ==" if i % 4 else None, 100 - i % 5) if i % 5 == 0 else None)
                  for i, k in enumerate(["issue", "pull_request", "discussion"] * 24, start=1))
    lists = (Q.ListSeg("issue", 100, None, "2020-01-01T00:00:00Z"), Q.ListSeg("pull_request", 7, "Y3Vyc29y"),
             Q.ListSeg("discussion", 100))
    blocks = (Q.RepoBlock("a", 'we"ird', lists, fills[:40]), Q.RepoBlock("c-d", "e.f", (), fills[40:]))
    req = sum(f.requests for f in fills) + len(lists)
    replies = tuple(Q.Replies(f"DC_{i}", Q.Page("eA==" if i % 2 else None)) for i in range(149 - req))
    return Q.Plan(blocks, replies)


def _client_queries() -> list[tuple[str, dict]]:
    return [(Q.build(_full_plan()), {}), (Q.repo_meta_query([("a", "b")] * 100), {})]


def _schema_sdl() -> str:
    """GitHub's public schema: ../shared/github/schema.graphql when the checkout sits beside shared/ (CI),
    else the identical copy shipped in the miner package."""
    import gzip
    from importlib import resources

    if SHARED_SCHEMA.exists():
        return SHARED_SCHEMA.read_text(encoding="utf-8")
    return gzip.decompress(resources.files("miner").joinpath("github_schema.graphql.gz").read_bytes()).decode()


def test_shipped_schema_is_the_shared_one() -> None:
    import gzip
    from importlib import resources

    if not SHARED_SCHEMA.exists():
        pytest.skip("no ../shared beside this checkout")
    shipped = gzip.decompress(resources.files("miner").joinpath("github_schema.graphql.gz").read_bytes()).decode()
    assert shipped == SHARED_SCHEMA.read_text(encoding="utf-8")


def test_client_queries_valid_against_shared_schema() -> None:
    schema = build_schema(_schema_sdl(), assume_valid_sdl=True)
    schema._validation_errors = []
    for q, _v in _client_queries():
        assert validate(schema, parse(q)) == [], q[:80]


def test_every_client_query_costs_one_point() -> None:
    assert Q.plan_cost(_full_plan()).requests == Q.QUERY_REQUESTS
    for q, v in _client_queries():
        _doc, cost = check_query(q, v)
        assert cost.points == 1, (q[:60], cost)


def test_plan_cost_equals_githubs_formula_on_random_plans() -> None:
    rng = random.Random(5)
    kinds = ["issue", "pull_request", "discussion"]

    def page() -> Q.Page | None:
        return rng.choice([None, Q.Page(), Q.Page("eA==", rng.randint(1, 100))])

    for _ in range(30):
        blocks = []
        for b in range(rng.randint(0, 4)):
            lists = tuple(Q.ListSeg(k, rng.randint(1, 100), rng.choice([None, "eA=="]), rng.choice([None, "2021-01-01"]))
                          for k in rng.sample(kinds, rng.randint(0, 3)))
            fills = [Q.Fill(rng.choice(kinds), rng.randint(1, 10**6), page(), page(),
                            rng.choice([None, Q.TailPage(), Q.TailPage("eA==", rng.randint(1, 100))]),
                            via_list=rng.random() < 0.2, list_after=rng.choice([None, "eQ=="]))
                     for _ in range(rng.randint(0, 60))]
            walks = tuple(Q.ReplyWalk(rng.randint(1, 999), rng.choice([None, "eA=="]), rng.randint(1, 10),
                                      rng.choice([None, "eQ=="]), via_list=rng.random() < 0.5,
                                      list_after=rng.choice([None, "eA=="])) for _ in range(rng.randint(0, 3)))
            locates = tuple(Q.Locate(rng.choice(kinds), rng.choice([None, "eA=="])) for _ in range(rng.randint(0, 2)))
            blocks.append(Q.RepoBlock(f"o{b}", f"n{b}", lists, tuple(f for f in fills if f.requests), walks,
                                      locates))
        replies = tuple(Q.Replies(f"DC_{i}", Q.Page(rng.choice([None, "eA=="]), rng.randint(1, 100)))
                        for i in range(rng.randint(0 if blocks else 1, 80)))
        plan = Q.Plan(tuple(blocks), replies)
        _doc, cost = check_query(Q.build(plan))
        mine = Q.plan_cost(plan)
        assert (mine.requests, mine.points, mine.nodes) == (cost.requests, cost.points, cost.nodes)


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
    fills = tuple(Q.Fill("issue", i, Q.Page(), Q.Page()) for i in range(75))
    assert check_query(Q.build(Q.Plan((Q.RepoBlock("a", "b", (), fills[:74]),))))[1].points == 1  # 148 requests
    assert check_query(Q.build(Q.Plan((Q.RepoBlock("a", "b", (), fills),))))[1].points == 2  # 150 requests
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
