"""DPO rejected answers: the swap of a refuted claim, and donors of another type, repository and length."""

from __future__ import annotations

from collections import Counter

from reprodiag.build import Diagnosis, render
from reprodiag.pairs import Candidate, choose_donors, donor_pair, swapped


def _d(etype: str, cause: str, refuted: tuple[str, ...] = (), claims: tuple[str, ...] = (),
       gap: str = "BLEU came out at 25.1 against the paper's 27.6, 2.5 below it.") -> Diagnosis:
    return Diagnosis(error_type=etype, refuted=refuted, confirmed=(), untested=(), cause=cause, resolved=True,
                     fix=None, gap=gap, claims=claims)


def test_swap_states_the_refuted_claim_and_rules_out_the_true_cause() -> None:
    d = _d("data", "The BPE was not joint.", refuted=("The seed explains it.", "The beam is 4."),
           claims=("The beam is 4.",))
    s = swapped(d, "evaluation_protocol")
    assert s.cause == "The beam is 4." and s.refuted == ("The seed explains it.", "The BPE was not joint.")
    assert s.error_type == "evaluation_protocol" and not s.claims
    assert abs(len(render(s)) - len(render(d))) < 40
    assert swapped(_d("data", "x", refuted=("Did you?",))) is None  # no claim: nothing to swap


def _cand(key: str, repo: str, etype: str, metric: str, cause: str) -> Candidate:
    d = _d(etype, cause)
    return Candidate(key=key, repo=repo, metric=metric, diagnosis=d)


def test_donors_differ_in_type_and_repository_prefer_the_metric_and_serve_two_pairs_at_most() -> None:
    pool = [_cand(f"r{i}#1", f"o/r{i}", ["data", "hyperparameter", "seed_hardware"][i % 3],
                  ["BLEU", "mAP"][i % 2], f"Cause number {i} is a sentence of moderate length here.")
            for i in range(12)]
    needs = [_cand("n#1", "o/n", "data", "BLEU", "The true cause of this thread is a long sentence."),
             *[_cand(f"m{i}#1", "o/m", "hyperparameter", "mAP", f"Another cause {i}.") for i in range(10)]]
    donors = choose_donors(needs, pool + needs, seed=0)
    assert donors["n#1"].diagnosis.error_type != "data" and donors["n#1"].metric == "BLEU"
    for k, p in donors.items():
        need = next(n for n in needs if n.key == k)
        assert p.repo != need.repo and p.diagnosis.error_type != need.diagnosis.error_type
    uses = Counter(p.diagnosis.cause for p in donors.values())
    assert max(uses.values()) <= 2
    assert choose_donors(needs, pool + needs, seed=0) == donors  # deterministic for a seed


def test_donor_pairs_have_the_same_shape_and_this_threads_symptom() -> None:
    chosen = Diagnosis(error_type="data", refuted=("a is ruled out.", "b is ruled out."), confirmed=("c holds.",),
                       untested=(), cause="x", resolved=False, fix=None, gap="BLEU came out at 25.1 against the paper's 27.6.")
    donor = Candidate(key="a#1", repo="o/a", metric="BLEU", diagnosis=Diagnosis(
        error_type="seed_hardware", refuted=("p is ruled out.",), confirmed=("q holds.", "r holds."),
        untested=("s is open.",), cause="Seed variance of 0.5 BLEU.", resolved=True, fix=None, gap="v"))
    c, x = donor_pair(donor, chosen)
    assert x.gap == chosen.gap and x.cause == "Seed variance of 0.5 BLEU." and x.error_type == "seed_hardware"
    assert not x.resolved  # the cause label reads like the chosen answer's
    assert (len(c.refuted), len(c.confirmed), len(c.untested)) == (len(x.refuted), len(x.confirmed),
                                                                    len(x.untested)) == (1, 1, 0)
    assert c.cause == "x" and c.refuted == ("a is ruled out.",)
