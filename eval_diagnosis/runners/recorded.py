"""A model's answers read from its Batch API results (``eval --collect``) instead of asked one by one."""

from __future__ import annotations

from pathlib import Path

from eval_diagnosis.prompt import answer_custom_id
from eval_diagnosis.providers import ProviderError, batch_provider
from reprodiag.errors import UserError
from reprodiag.schema import EvalItem


class RecordedRunner:
    """``spec``'s answers from a Batch API results file (OpenAI or Anthropic format), looked up by the custom
    id :func:`~eval_diagnosis.prompt.answer_custom_id` gave the request. A missing or failed answer raises
    :class:`ProviderError` (an error row, reported apart; a later ``--collect`` fills it in)."""

    cacheable = False
    #: A recorded answer is final: asking again gives the same.
    attempts = 1

    def __init__(self, spec: str, results: Path) -> None:
        from extract.recorded import read_results

        batch_provider(spec)
        if not Path(results).is_file():
            raise UserError(f"no batch results at {results}")
        self.spec = spec
        self.results = read_results(Path(results))

    def answer(self, item: EvalItem) -> str:
        comp, err = self.results.get(answer_custom_id(self.spec, item), (None, "no answer in the batch results"))
        if comp is None or err:
            raise ProviderError(f"{self.spec}: {err or 'no answer'}")
        if comp.text is None:
            raise ProviderError(f"{self.spec}: the batch result holds no text")
        return comp.text
