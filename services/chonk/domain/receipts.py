"""A receipt formatted per surface (§5.3): chat and app with the collapsed Receipts block,
rules and the confidence line; SMS with no markers, ending "Reply WHY", which is answered by
the numbered list in at most three segments. The owner console draws the body beside the
receipt itself (the run's report carries both)."""

import re
from collections.abc import Sequence

from services.chonk.domain.types import Draft, Finding, Receipt

__all__ = ["SEGMENT", "block", "chat", "sms", "template", "why"]

SEGMENT = 160
_MARKER = re.compile(r"\s*\[\d+\]")


def _when(receipt: Receipt, n: int) -> str:
    source = next(s for s in receipt.sources if s.n == n)
    return source.as_of.strftime("%Y-%m-%d %H:%MZ")


def _footer(receipt: Receipt) -> list[str]:
    lines = []
    if receipt.rule_evaluations:
        lines.append(
            "Rules: " + " · ".join(f"{r.rule_id} {r.result}" for r in receipt.rule_evaluations)
        )
    gaps = "; ".join(receipt.gaps) or "none"
    lines.append(f"Confidence {receipt.confidence:.2g} · gaps: {gaps}")
    return lines


def chat(draft: Draft, receipt: Receipt) -> str:
    return f"{draft.body}\n\n{block(receipt)}"


def block(receipt: Receipt) -> str:
    """The collapsed Receipts block: a source a line, then the rules and confidence."""
    sources = [f"[{s.n}] {s.label} (as of {_when(receipt, s.n)})" for s in receipt.sources]
    return "\n".join(["Receipts", *sources, *_footer(receipt)])


def sms(draft: Draft) -> str:
    """No inline markers (the limit); the receipt exists in full regardless."""
    return f"{_MARKER.sub('', draft.body).strip()} Reply WHY for sources."


def why(receipt: Receipt, *, segments: int = 3) -> list[str]:
    """The numbered list, in at most `segments` SMS segments; a label that does not fit is
    cut, never a source left out."""
    lines = [f"[{s.n}] {s.label}" for s in receipt.sources]
    budget = segments * SEGMENT - len(lines)  # a newline between lines
    each = max(8, budget // max(1, len(lines)))
    lines = [line if len(line) <= each else line[: each - 1] + "…" for line in lines]
    text = "\n".join(lines)
    return [text[i : i + SEGMENT] for i in range(0, len(text), SEGMENT)][:segments]


def template(findings: Sequence[Finding], *, step_id: str, surface: str) -> Draft:
    """The deterministic draft sent when a writer's tone stays above the ceiling (§11,
    RC-MGR-03): what was found, item by item, each with its citations, and no voice."""
    lines = ["Here is what I found:"] + [
        f"- {item.text} {''.join(f'[{n}]' for n in item.sources)}"
        for finding in findings
        for item in finding.items
    ]
    return Draft(step_id=step_id, surface=surface, body="\n".join(lines), tone_used=0.0)  # type: ignore[arg-type]
