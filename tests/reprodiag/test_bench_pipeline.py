"""``reprodiag bench pipeline``: the generated corpus and a small end-to-end run of every stage command."""

from __future__ import annotations

from collections import Counter

from reprodiag.bench_pipeline import RELEVANT_SHARE, pipeline_corpus, run_bench


def test_generated_corpus_is_deterministic_distinct_and_mixed() -> None:
    threads, meta = pipeline_corpus(3000, seed=3)
    again, _ = pipeline_corpus(3000, seed=3)
    assert [t.model_dump_json() for t in threads] == [t.model_dump_json() for t in again]
    assert [t.model_dump_json() for t in pipeline_corpus(3000, seed=4)[0]] != [t.model_dump_json() for t in threads]
    ids = [t.id for t in threads]
    assert len(set(ids)) == len(ids) and set(meta) == {t.repo for t in threads}
    comment_ids = [c.id for t in threads for c in t.all_comments()]
    assert len(set(comment_ids)) == len(comment_ids)
    assert max(Counter(t.repo for t in threads).values()) <= 150
    assert len({t.body for t in threads}) > 0.8 * len(threads)  # fresh logs and tables: few equal texts
    # the share of threads taken from labeled reproductions
    from extract.realcorpus import load_real

    repro_titles = {r.thread.title for part in ("dev", "test") for r in load_real(part) if r.gold["is_reproduction"]}
    share = sum(t.title in repro_titles for t in threads) / len(threads)
    assert abs(share - RELEVANT_SHARE) < 0.03


def test_every_stage_runs_as_its_command_and_is_measured() -> None:
    report = run_bench(threads=300, seed=1)
    c = report.counts
    for stage in ("index", "mine", "filter", "extract", "score", "build"):
        assert c[f"{stage}_wall_s"] > 0 and c[f"{stage}_peak_rss_mb"] > 0, stage
    assert c["mine_rows"] == c["filter_rows"] == 300
    assert 0 < c["extract_rows"] < 300 and c["score_rows"] == c["extract_rows"]
    assert c["workspace_mb"] > 0 and c["mine_workspace_mb"] <= c["workspace_mb"]
    assert sum(line.split()[0] in {"index", "mine", "filter", "extract", "score", "build"}
               for line in report.notes) == 6
