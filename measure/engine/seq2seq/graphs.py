"""Which graph files make a tier, and what their input and output names and types mean.

Three layouts are understood, each discovered from the graphs' own input and
output names (never from a hard-coded layer count):

* ``simple``: ``encoder.onnx`` + ``decoder-kv.onnx``; ``past_key_{i}``/``past_value_{i}``
  in, ``present_key_{i}``/``present_value_{i}`` out; self-attention cached only and
  ``encoder_hidden_states`` fed on every call.
* ``optimum``: Hugging Face optimum's ``encoder_model.onnx`` + ``decoder_model.onnx``
  (first call) + ``decoder_with_past_model.onnx`` (later calls), with
  ``past_key_values.{i}.{decoder,encoder}.{key,value}`` and ``present.{i}...``.
* ``optimum-merged``: ``decoder_model_merged.onnx``, one graph whose
  ``use_cache_branch`` input picks the first-call or the with-past branch.

This module only says what a folder holds and what its graphs' names mean, for the
layouts and for tools that look at a folder (quantize, scaffold); :mod:`measure.engine.seq2seq.layouts`
opens the graphs and feeds each layout.
"""

from __future__ import annotations

import re
from pathlib import Path

from measure.engine.session import TimedSession
from measure.errors import MeasureError

SIMPLE_PAST = re.compile(r"^past_(key|value)_(\d+)$")
SIMPLE_PRESENT = re.compile(r"^present_(key|value)_(\d+)$")
OPT_PAST = re.compile(r"^past_key_values\.(\d+)\.(decoder|encoder)\.(key|value)$")
OPT_PRESENT = re.compile(r"^present\.(\d+)\.(decoder|encoder)\.(key|value)$")

LAYOUT_FILES = {
    "optimum-merged": ("encoder_model.onnx", "decoder_model_merged.onnx"),
    "optimum": ("encoder_model.onnx", "decoder_model.onnx", "decoder_with_past_model.onnx"),
    "simple": ("encoder.onnx", "decoder-kv.onnx"),
}


def detect_layout(folder: Path) -> str:
    """The layout whose graph files are all present, or a one-line error saying what was expected."""
    for layout, files in LAYOUT_FILES.items():
        if all((folder / f).is_file() for f in files):
            return layout
    found = sorted(p.name for p in folder.glob("*.onnx")) if folder.is_dir() else []
    raise MeasureError(
        f"{folder}: missing model graphs: expected encoder_model.onnx with decoder_model.onnx + "
        f"decoder_with_past_model.onnx or decoder_model_merged.onnx (optimum layout), "
        f"or encoder.onnx + decoder-kv.onnx (seq2seq); or, decoder-only, model.onnx, decoder_model_merged.onnx or "
        f"decoder_model.onnx + decoder_with_past_model.onnx; found {', '.join(found) or 'no .onnx files'}"
    )


def check_names(session: TimedSession, known: set[str], patterns: tuple[re.Pattern[str], ...], what: str) -> None:
    """Refuse a graph with an input (``what="input"``) or output name no layout gives a meaning to."""
    names = list(session.inputs) if what == "input" else list(session.outputs)
    bad = [n for n in names if n not in known and not any(p.match(n) for p in patterns)]
    if bad:
        raise MeasureError(
            f"{session.path}: {what} {bad[0]!r} is not one the engine understands; found {what}s: {', '.join(names)}"
        )


def check_layers(found: set[int], path: Path, what: str) -> int:
    """The layer count from the layer indices found in the cache names, refusing none or a gap."""
    if not found:
        raise MeasureError(f"{path}: no {what} inputs found; the engine needs the key/value cache to decode in O(T)")
    if found != set(range(len(found))):
        raise MeasureError(f"{path}: {what} layers are {sorted(found)}; expected 0..{len(found) - 1}")
    return len(found)
