"""`one-shot`: one request for n answers, each judged (what `cudasmith ask` does)."""

from __future__ import annotations

from cudasmith.search.prompts import Parent
from cudasmith.search.strategies.base import Event, Proposal, SearchCandidate, SearchContext, Strategy


class OneShot(Strategy):
    """Asks once, for `config.n` answers, to solve the task or to improve `parent`."""

    name = "one-shot"

    def __init__(self, context: SearchContext, parent: Parent | None = None) -> None:
        super().__init__(context)
        self.parent = parent
        self.asked = False
        self.done = False

    def proposed(self, proposal: Proposal) -> None:
        self.asked = True

    def propose(self, limit: int) -> list[Proposal]:
        if self.asked or limit < 1:
            return []
        context = self.context
        prompt = context.builder.build(context.problem, context.device, context.hardware, parent=self.parent)
        operator = "first" if self.parent is None else "refine"
        source = None if self.parent is None else self.parent.source
        return [Proposal("ask", 0, operator, prompt=prompt, n=context.config.n, parent_source=source)]

    def settled(self, proposal: Proposal, candidates: list[SearchCandidate]) -> list[Event]:
        self.done = True
        return []

    def finished(self) -> str | None:
        return "every answer judged" if self.done else None
