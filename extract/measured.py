"""What each reader was measured to do on the frozen ``test`` part of the real-thread corpus (200 threads the
readers were never tuned on), as ``reprodiag bench extract`` prints it: the figures dataset cards and the
README quote. ``tests/extract/test_measured.py`` recomputes them, so they cannot drift from the code.

The LLM reader's figures are those of recorded answers (:mod:`extract.recorded`): a capable model's answers
to the project's own batch requests, scored by the same code as the offline reader's. A cheaper model may
score lower: measure it with ``reprodiag bench extract --backend B --model M --set test`` before a paid run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ReaderFigures:
    """Shares on the test part; ``dataset_*`` and ``eval_sound`` are over the records ``score`` keeps.

    ``eval_sound``: of the kept records that would become eval items, the share whose thread is a resolved
    reproduction of the recorded error type (a sound gold)."""

    reader: str
    how: str
    error_type: float
    is_resolved: float
    paper_value: float
    obtained_value: float
    false_positive_rate: float
    dataset_precision: float
    eval_sound: float

    def line(self) -> str:
        return (f"{self.reader} ({self.how}): error type {self.error_type:.2f}, is_resolved {self.is_resolved:.2f}, "
                f"paper/obtained value {self.paper_value:.2f}/{self.obtained_value:.2f}, false-positive rate "
                f"{self.false_positive_rate:.2f}; records kept for the datasets: precision "
                f"{self.dataset_precision:.2f}, eval_sound {self.eval_sound:.2f}")


#: ``reprodiag bench extract --set test`` (the shipped learned models).
OFFLINE = ReaderFigures("offline reader", "rules and learned models, no LLM", error_type=0.588, is_resolved=0.699,
                        paper_value=0.669, obtained_value=0.522, false_positive_rate=0.344,
                        dataset_precision=0.951, eval_sound=0.462)
#: ``reprodiag bench extract --answers extract/data/recorded --set test`` (prompt extract-v3).
LLM = ReaderFigures("LLM reader", "prompt extract-v3, answers of claude (Anthropic) recorded 2026-12-03..05",
                    error_type=0.853, is_resolved=0.926, paper_value=0.963, obtained_value=0.926,
                    false_positive_rate=0.031, dataset_precision=0.979, eval_sound=0.838)

#: reader name of :func:`reprodiag.build.reader_of` → its figures
BY_READER = {"offline": OFFLINE, "llm": LLM}
