"""The one interface every extractor backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

from reprodiag.schema import Record, Thread


class Extractor(ABC):
    """Turns threads into records. A new provider is one new subclass in its own module.

    ``extract`` returns one record per thread it could extract, in input order;
    threads it could not extract are left out (LLM backends list them in
    ``failures``: thread id → one-line reason).
    """

    backend: str = "base"

    @abstractmethod
    def extract(self, threads: list[Thread]) -> list[Record]:
        """Records for ``threads``."""
