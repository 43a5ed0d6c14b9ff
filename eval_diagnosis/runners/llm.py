"""A model behind a chat API answers the item's prompt."""

from __future__ import annotations

from eval_diagnosis.prompt import messages
from eval_diagnosis.providers import ChatClient
from reprodiag.schema import EvalItem


class LLMRunner:
    cacheable = True

    def __init__(self, chat: ChatClient) -> None:
        self.chat = chat
        self.spec = chat.spec

    def answer(self, item: EvalItem) -> str:
        system, user = messages(item)
        return self.chat.complete(system, user)
