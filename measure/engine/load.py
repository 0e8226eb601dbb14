"""One way to load a tier of either model kind: the folder's graphs say which family opens it."""

from __future__ import annotations

from pathlib import Path

from measure.engine.causal.tier import CausalTier
from measure.engine.kind import detect_kind
from measure.engine.options import SessionConfig
from measure.engine.seq2seq.tier import Seq2SeqTier
from measure.engine.session import AfterRun
from measure.engine.tier import Tier
from measure.errors import MeasureError


def load_tier(
    folder: Path | str,
    config: SessionConfig | None = None,
    label: str | None = None,
    after_run: AfterRun | None = None,
    name: str | None = None,
    *,
    prompt: str | None = None,
    max_new_tokens: int | None = None,
) -> Tier:
    """Load a tier of either model kind (a decoder-only folder, an onnxruntime-genai one included, is looked for
    first); ``after_run`` is called inside the timing after every call (test-only, e.g. a slowdown). ``prompt``
    overrides a decoder-only tier's template; a seq2seq tier takes none. ``max_new_tokens``: the decode length a
    suite config sets (None: the tier's own, :meth:`~measure.engine.folder.TierFolder.decode_limit`)."""
    folder = Path(folder)
    if detect_kind(folder) == "causal":
        return CausalTier(folder, config, label, after_run, name, prompt=prompt, max_new_tokens=max_new_tokens)
    if prompt is not None:
        raise MeasureError(f"{folder}: a prompt template is for decoder-only tiers; this is an encoder-decoder one")
    return Seq2SeqTier(folder, config, label, after_run, name, max_new_tokens=max_new_tokens)
