"""miner.fake_executor gives graphql-core's answers: every document runs through both executors."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from graphql import DocumentNode, ExecutionResult, GraphQLSchema, build_schema, execute, parse, validate

from miner.fake_executor import execute_fast
from miner.fake_github import FakeGitHub, _execute_text, _gh_error, _Graph
from miner.github_schema import check_query, github_schema
from miner.synthetic import Corpus
from tests.miner.conftest import odd_threads

RATE = {"cost": 1, "remaining": 4999, "limit": 5000, "used": 1, "nodeCount": 100, "resetAt": "2024-01-01T00:00:00Z"}

FRAGMENTS = """
fragment IssueHead on Issue {
  number url title body createdAt updatedAt closedAt authorAssociation state stateReason
  author { login } reactions { totalCount } labels { totalCount } comments { totalCount }
}
fragment PullHead on PullRequest {
  number url title body createdAt updatedAt closedAt authorAssociation state
  author { login } reactions { totalCount } labels { totalCount } comments { totalCount }
}
fragment DiscussionHead on Discussion {
  number url title body createdAt updatedAt closed closedAt stateReason authorAssociation
  author { login } reactions { totalCount } category { name } answer { id }
  labels { totalCount } comments { totalCount }
}
fragment CommentFields on IssueComment {
  id body createdAt authorAssociation author { login } reactions { totalCount }
}
fragment DCommentFields on DiscussionComment {
  id body createdAt authorAssociation isAnswer author { login } reactions { totalCount }
}
fragment Replies on DiscussionComment { replies(first: 100) { pageInfo { hasNextPage endCursor } nodes { ...DCommentFields } } }
"""


def _with_fragments(query: str) -> str:
    """``query`` followed by the fragments of FRAGMENTS it spreads (GitHub rejects unused fragments)."""
    blocks = ["fragment " + b for b in FRAGMENTS.split("fragment ")[1:]]
    used: list[str] = []
    text = query
    changed = True
    while changed:
        changed = False
        for b in blocks:
            name = b.split()[1]
            if b not in used and "..." + name + " " in text.replace("}", " } ") + " ":
                used.append(b)
                text += "\n" + b
                changed = True
    return text


def _summary(result: ExecutionResult) -> tuple[Any, list[tuple[Any, ...]]]:
    """``data`` and, per error in order, message, path, locations and the GitHub error type."""
    errors = [(e.message, e.path, [(loc.line, loc.column) for loc in e.locations or ()],
               getattr(e.original_error, "gh_type", None)) for e in result.errors or ()]
    return result.data, errors


def _both(schema: GraphQLSchema, doc: DocumentNode, root: Callable[[], Any],
          variables: dict[str, Any] | None = None) -> ExecutionResult:
    """Execute with graphql-core and with execute_fast (each over a fresh root); assert equal; the fast result."""
    ref = execute(schema, doc, root_value=root(), variable_values=variables)
    fast = execute_fast(schema, doc, root_value=root(), variable_values=variables)
    assert isinstance(ref, ExecutionResult)
    assert _summary(fast) == _summary(ref)
    return fast


@pytest.fixture(scope="module")
def graph(corpus: Corpus) -> _Graph:
    return FakeGitHub(list(corpus.threads) + odd_threads(), corpus.repos_meta).graph


def _gh(graph: _Graph, query: str, variables: dict[str, Any] | None = None) -> ExecutionResult:
    doc, _ = check_query(_with_fragments(query), variables)

    def root() -> dict[str, Any]:
        return {"repository": graph.repository, "node": graph.node, "rateLimit": lambda info, **a: RATE}

    result = _both(github_schema(), doc, root, variables)
    # the fake's own answer is graphql-core's, written as GitHub writes it
    ref = execute(github_schema(), doc, root_value=root(), variable_values=variables)
    assert isinstance(ref, ExecutionResult)
    want: dict[str, Any] = {"data": ref.data}
    if ref.errors:
        want["errors"] = [_gh_error(e) for e in ref.errors]
    assert _execute_text(graph, doc, variables or {}, RATE) == json.dumps(want)
    return result


def _repos(corpus: Corpus) -> list[tuple[str, str]]:
    return [tuple(k.split("/")) for k in corpus.repos_meta]  # type: ignore[misc]


def test_packed_list_segments_match_graphql_core(graph: _Graph, corpus: Corpus) -> None:
    blocks = []
    for i, (owner, name) in enumerate(_repos(corpus)):
        blocks.append(f"""r{i}: repository(owner: "{owner}", name: "{name}") {{
          nameWithOwner hasIssuesEnabled hasDiscussionsEnabled
          l0: issues(first: 100, orderBy: {{field: UPDATED_AT, direction: ASC}}) {{ totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ ...IssueHead }} }}
          l1: pullRequests(first: 100, orderBy: {{field: UPDATED_AT, direction: DESC}}) {{ totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ ...PullHead }} }}
          l2: discussions(first: 100, orderBy: {{field: UPDATED_AT, direction: DESC}}) {{ totalCount pageInfo {{ hasNextPage endCursor }} nodes {{ ...DiscussionHead }} }}
        }}""")
    q = "query Mine { rateLimit { cost remaining resetAt limit }\n" + "\n".join(blocks) + "}\n"
    result = _gh(graph, q)
    assert result.errors is None and result.data is not None
    issues = [t for t in corpus.threads if t.repo == "/".join(_repos(corpus)[0]) and t.kind == "issue"]
    assert result.data["r0"]["l0"]["totalCount"] == len(issues) > 0
    assert result.data["rateLimit"] == {k: RATE[k] for k in ("cost", "remaining", "resetAt", "limit")}


def test_fills_with_cursors_not_found_issue_and_not_found_repository(graph: _Graph, corpus: Corpus) -> None:
    big = max((t for t in corpus.threads if t.kind == "issue"), key=lambda t: len(t.comments))
    owner, name = big.repo.split("/")
    q = f"""query Fill($after: String) {{
      rateLimit {{ cost }}
      r0: repository(owner: "{owner}", name: "{name}") {{
        nameWithOwner
        f0: issue(number: {big.number}) {{ comments(first: 100) {{ pageInfo {{ hasNextPage endCursor }} nodes {{ ...CommentFields }} }} }}
        f1: issue(number: 999999) {{ comments(first: 100) {{ nodes {{ id }} }} }}
        f2: issue(number: {big.number}) {{ comments(first: 100, after: $after) {{ pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }} nodes {{ ...CommentFields }} }} }}
      }}
      r1: repository(owner: "nobody", name: "nothing") {{ nameWithOwner }}
    }}"""
    first = _gh(graph, q)
    assert first.data is not None
    cursor = first.data["r0"]["f0"]["comments"]["pageInfo"]["endCursor"]
    result = _gh(graph, q, {"after": cursor})
    assert result.data is not None and result.errors is not None
    r0 = result.data["r0"]
    assert r0["f1"] is None and result.data["r1"] is None
    assert [c["id"] for c in r0["f2"]["comments"]["nodes"]] == [c.id for c in big.comments[100:200]]
    assert [(e.path, e.original_error.gh_type) for e in result.errors] == [  # type: ignore[union-attr]
        (["r0", "f1"], "NOT_FOUND"), (["r1"], "NOT_FOUND")]


def test_aliases_last_before_paging_variables_and_directives(graph: _Graph, corpus: Corpus) -> None:
    owner, name = _repos(corpus)[1]
    q = """query Paging($owner: String!, $name: String!, $n: Int = 3, $x: Boolean!, $before: String,
                      $order: IssueOrder = {field: CREATED_AT, direction: DESC}) {
      repository(owner: $owner, name: $name) {
        id __typename
        a: issues(first: $n, orderBy: $order) { edges { cursor node { number __typename } } }
        b: issues(last: 2, before: $before, orderBy: {field: CREATED_AT, direction: ASC}) {
          pageInfo { hasPreviousPage hasNextPage startCursor } nodes { number }
        }
        c: issues(first: 5, states: [CLOSED], filterBy: {since: "2000-01-01T00:00:00Z"}) { totalCount nodes { number state } }
        d: issues(first: 2) @include(if: $x) { nodes { title } }
        e: issues(first: 2) @skip(if: $x) { nodes { title } }
        issues(first: 2) { nodes { number } }
        issues(first: 2) { totalCount nodes { title ... on Issue { number labels(first: 5) { nodes { name } } } } }
      }
    }"""
    base = {"owner": owner, "name": name, "x": True}
    first = _gh(graph, q, base)
    assert first.data is not None and first.errors is None
    repo = first.data["repository"]
    assert "d" in repo and "e" not in repo and repo["__typename"] == "Repository"
    assert set(repo["issues"]["nodes"][0]) == {"number", "title", "labels"}  # merged selections
    before = repo["a"]["edges"][-1]["cursor"]
    second = _gh(graph, q, {**base, "x": False, "n": 7, "before": before,
                            "order": {"field": "UPDATED_AT", "direction": "ASC"}})
    assert second.data is not None
    assert "e" in second.data["repository"] and "d" not in second.data["repository"]
    assert len(second.data["repository"]["a"]["edges"]) == 7


def test_node_fragments_typename_and_missing_node(graph: _Graph, corpus: Corpus) -> None:
    disc = next(t for t in corpus.threads if t.kind == "discussion" and any(c.replies for c in t.comments))
    with_replies = next(c for c in disc.comments if c.replies)
    issue_comment = next(t for t in corpus.threads if t.kind == "issue" and t.comments).comments[0]
    q = f"""{{
      n0: node(id: "{with_replies.id}") {{ ...Replies }}
      n1: node(id: "{with_replies.id}") {{ __typename id ... on DiscussionComment {{ replies(last: 1) {{ nodes {{ id author {{ __typename ... on User {{ login }} }} }} }} }} }}
      n2: node(id: "{issue_comment.id}") {{ __typename ...Replies ... on IssueComment {{ body }} }}
      n3: node(id: "no-such-node") {{ id }}
      n4: node(id: "{with_replies.id}") {{ ... on Node {{ id }} ... on Reactable {{ reactions {{ totalCount }} }} }}
    }}"""
    result = _gh(graph, q)
    assert result.data is not None and result.errors is not None
    assert [r["id"] for r in result.data["n0"]["replies"]["nodes"]] == [r.id for r in with_replies.replies]
    assert result.data["n1"]["__typename"] == "DiscussionComment"
    assert result.data["n2"] == {"__typename": "IssueComment", "body": issue_comment.body}
    assert result.data["n3"] is None and [e.path for e in result.errors] == [["n3"]]


def test_non_null_field_error_nulls_its_nullable_parent(graph: _Graph, corpus: Corpus) -> None:
    # Issue.comments and Repository.issues are non-null connections; a bad cursor makes their resolver raise
    owner, name = _repos(corpus)[0]
    number = next(t.number for t in corpus.threads if t.repo == f"{owner}/{name}" and t.kind == "issue")
    q = f"""query Bad($cur: String) {{
      ok: repository(owner: "{owner}", name: "{name}") {{
        one: issue(number: {number}) {{ number comments(first: 2, after: "nope") {{ totalCount }} title }}
        two: issue(number: {number}) {{ number }}
        issues(first: 3) {{ nodes {{ number comments(first: 1, after: $cur) {{ totalCount }} }} }}
      }}
      gone: repository(owner: "{owner}", name: "{name}") {{ id issues(first: 2, after: "nope") {{ totalCount }} }}
    }}"""
    result = _gh(graph, q, {"cur": "bad"})
    assert result.data is not None and result.errors is not None
    repo = result.data["ok"]
    assert repo["one"] is None and repo["two"] == {"number": number}
    assert repo["issues"]["nodes"] == [None, None, None] and result.data["gone"] is None
    # one error per nulled position, at the field that raised; the fields after it were never run
    assert [(e.message, e.path) for e in result.errors] == [
        ("`nope` does not appear to be a valid cursor.", ["ok", "one", "comments"]),
        ("`bad` does not appear to be a valid cursor.", ["ok", "issues", "nodes", 0, "comments"]),
        ("`bad` does not appear to be a valid cursor.", ["ok", "issues", "nodes", 1, "comments"]),
        ("`bad` does not appear to be a valid cursor.", ["ok", "issues", "nodes", 2, "comments"]),
        ("`nope` does not appear to be a valid cursor.", ["gone", "issues"])]
    # with a good cursor nothing is nulled
    cursor = _gh(graph, q.replace('after: "nope"', "first: 1").replace("(first: 2, first: 1)", "(first: 1)"),
                 {"cur": None})
    assert cursor.data is not None and cursor.data["ok"]["one"] is not None


def test_bad_variables_give_no_data(graph: _Graph) -> None:
    doc, _ = check_query("query Q($owner: String!) { repository(owner: $owner, name: \"x\") { id } }")
    missing = _both(github_schema(), doc, lambda: {"repository": graph.repository}, {})
    assert missing.data is None and missing.errors
    wrong = _both(github_schema(), doc, lambda: {"repository": graph.repository}, {"owner": 5})
    assert wrong.data is None and wrong.errors


SMALL = build_schema("""
  interface Named { name: String }
  type Cat implements Named { name: String lives: Int! }
  type Dog implements Named { name: String good: Boolean! }
  union Pet = Cat | Dog
  enum Mood { HAPPY SAD }
  scalar Stamp
  type Box { n: Int! s: String items: [Int!] strict: [Int!]! inner: Box mood: Mood stamp: Stamp pets: [Pet] named: Named
             req: Box! grid: [[Int]] }
  type Query { box: Box top: Box! arg(a: Int = 7, b: [String!], m: Mood): String later: String need(a: Int! = 7): Int }
""")


def _small(query: str, root: Callable[[], Any], variables: dict[str, Any] | None = None) -> ExecutionResult:
    doc = parse(query)
    assert validate(SMALL, doc) == []
    return _both(SMALL, doc, root, variables)


def _raise(msg: str) -> Callable[..., Any]:
    def f(info: Any, **_: Any) -> Any:
        raise ValueError(msg)
    return f


def test_propagation_to_root_and_through_lists() -> None:
    def root() -> dict[str, Any]:
        return {
            "box": {"n": 1, "items": [1, None, 3], "strict": [1, 2], "inner": {"n": None, "s": "x"},
                    "req": {"n": _raise("boom")}, "grid": [[1, None], None, [3]]},
            "top": {"n": None}, "later": _raise("never reached"),
        }

    r = _small("{ box { n items inner { s n } grid } later }", root)
    assert r.data == {"box": {"n": 1, "items": None, "inner": None, "grid": [[1, None], None, [3]]},
                      "later": None}
    r = _small("{ box { req { n } strict } }", root)
    assert r.data == {"box": None} and r.errors and r.errors[0].path == ["box", "req", "n"]
    r = _small("{ top { n } later }", root)  # top is Box!: the whole answer is null; later never runs
    assert r.data is None and [e.path for e in r.errors or ()] == [["top", "n"]]


def test_abstract_types_leaves_and_arguments() -> None:
    def root() -> dict[str, Any]:
        return {
            "box": {"n": 3, "grid": [[2 ** 40, 1.0], [2]], "s": 5, "mood": "ANGRY", "stamp": {"any": ["json"]}, "items": "not a list",
                    "pets": [{"__typename": "Cat", "name": "tom", "lives": 9},
                             {"__typename": "Dog", "name": "rex", "good": True},
                             {"name": "no typename"}, {"__typename": "Box"}, {"__typename": "Nope"},
                             ValueError("an error value")],
                    "named": {"__typename": "Dog", "name": "d", "good": 1}},
            "arg": lambda info, **a: json.dumps(a, sort_keys=True),
        }

    r = _small("""query ($b: [String!], $m: Mood) {
      box { s mood stamp items pets { __typename ... on Named { name } ... on Cat { lives } ... on Dog { good } }
            named { __typename ... on Dog { good } } n grid }
      x: arg y: arg(a: 1, b: $b, m: $m) z: arg(b: "one")
    }""", root, {"b": ["p", "q"], "m": "SAD"})
    assert r.data is not None and r.data["box"] is not None
    assert r.data["box"]["s"] == "5" and r.data["box"]["mood"] is None and r.data["box"]["grid"] == [[None, 1], [2]]
    assert r.data["box"]["named"] == {"__typename": "Dog", "good": True}
    assert r.data["x"] == '{"a": 7}' and r.data["z"] == '{"a": 7, "b": ["one"]}'
    assert r.data["box"]["pets"][:2] == [{"__typename": "Cat", "name": "tom", "lives": 9},
                                         {"__typename": "Dog", "name": "rex", "good": True}]
    assert len(r.errors or ()) == 7


def test_argument_errors_are_field_errors_at_every_use() -> None:
    def root() -> dict[str, Any]:
        return {"need": lambda info, a: a, "box": {"items": [1, 2]}}

    q = "query ($v: Int) { a: need(a: $v) b: need box { items } c: need(a: $v) }"
    r = _small(q, root, {"v": None})  # an explicit null for an Int! argument: coerced per field, fails each time
    assert r.data == {"a": None, "b": 7, "box": {"items": [1, 2]}, "c": None}
    assert [e.path for e in r.errors or ()] == [["a"], ["c"]]
    assert _small(q, root, {"v": 3}).data == {"a": 3, "b": 7, "box": {"items": [1, 2]}, "c": 3}


def test_introspection_falls_back_to_graphql_core() -> None:
    r = _small("{ __schema { queryType { name } } __typename box { __typename } }", lambda: {"box": {}})
    assert r.data == {"__schema": {"queryType": {"name": "Query"}}, "__typename": "Query",
                      "box": {"__typename": "Box"}}
