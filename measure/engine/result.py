"""What one decode returns, for both model kinds: ids, text, why it stopped, and what it cost."""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter
from typing import Protocol

from measure.engine.session import Trace
from measure.engine.tokenizer import Tokenizer


class Decodes(Protocol):
    """What :func:`finish` needs of a tier, seq2seq or decoder-only."""

    @property
    def tokenizer(self) -> Tokenizer: ...


@dataclass(frozen=True)
class Decoded:
    """One decoded row and what it cost."""

    text: str
    tokens: tuple[int, ...]
    """Generated ids, without the decoder start token and without eos."""
    stopped: str
    """``eos`` or ``max_new_tokens``."""
    wall_s: float
    calls: int
    """onnxruntime calls, encoder included."""
    run_s: float
    """Time inside ``session.run``."""
    first_token_s: float | None = None
    """Source ids in -> first output token decided (encoder, first decoder call, argmax); greedy only."""
    detokenize_s: float = 0.0
    """Output ids -> output text, after the clock stopped: outside ``wall_s``, reported with tokenizing."""

    @property
    def outside_s(self) -> float:
        """The harness's own time: everything in the decode that is not ``session.run``."""
        return max(0.0, self.wall_s - self.run_s)


def finish(tier: Decodes, out: list[int], stopped: str, trace: Trace, first_token_s: float | None = None) -> Decoded:
    """Stop the clock (where the loop stamped the last decision, else now), then decode the text (timed apart)."""
    wall = max(0.0, (trace.ended or perf_counter()) - trace.started)
    start = perf_counter()
    text = tier.tokenizer.decode(out)
    return Decoded(
        text=text,
        tokens=tuple(out),
        stopped=stopped,
        wall_s=wall,
        calls=trace.calls(),
        run_s=trace.run_s(),
        first_token_s=first_token_s,
        detokenize_s=perf_counter() - start,
    )
