"""Logits a tier gives that are NaN or infinite: a finding about the tier, never a figure.

A graph with a NaN initializer, or an fp16 tier that overflows, still decodes (argmax picks something), but
every divergence, perplexity and framing difference taken from its logits is NaN: printed as a figure it
reads as a measurement, and JSON cannot carry it. The untimed passes that read logits (the run's first-step
check, the framing replay, the fidelity pass) check them here and stop with one line naming the tier and the
golden row.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from measure.errors import MeasureError


def require_finite(logits: np.ndarray, tier: str, golden: Path, line: int, step: str) -> None:
    """Refuse ``logits`` holding NaN or an infinity, naming ``tier``, the golden row (``golden`` and its
    ``line``) and the ``step`` that read them."""
    finite = np.isfinite(logits)
    if finite.all():
        return
    what = "NaN" if np.isnan(logits).any() else "infinite"
    position = int(np.argmin(finite.reshape(len(finite), -1).all(axis=-1))) if logits.ndim > 1 else 0
    raise MeasureError(
        f"tier {tier}: logits are {what} at row {line} ({golden}:{line}, {step}, position {position}); the "
        "graph gives no usable distribution (a NaN or infinite initializer, or an overflow at low precision), so "
        "nothing scored from it is a figure: check the tier's export or quantization, or leave the tier out"
    )
