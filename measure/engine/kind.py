"""A tier folder's model kind and decoder-only layout, told by the names of its files alone.

Kept apart from the families' modules (which open sessions) so a config can be read, and the kind of each
tier decided once, without importing onnxruntime.
"""

from __future__ import annotations

from pathlib import Path

CAUSAL_LAYOUT_FILES = {
    "causal": ("model.onnx",),
    "causal-split": ("decoder_model.onnx", "decoder_with_past_model.onnx"),
    "causal-merged": ("decoder_model_merged.onnx",),
    "genai": ("model.onnx",),
}
"""Graph files per decoder-only layout, in call order (``genai``: the builder's default; its config names the file)."""
SEQ2SEQ_MARKERS = ("encoder_model.onnx", "encoder.onnx")
"""An encoder graph makes a folder encoder-decoder, whatever else it holds."""
GENAI_MARKER = "genai_config.json"
"""onnxruntime-genai's model config: its presence makes a folder a genai one."""


def detect_causal_layout(folder: Path | str) -> str | None:
    """The decoder-only layout whose files are all present; None for an encoder-decoder folder or none at all.

    ``genai_config.json`` decides first: a genai folder's ``model.onnx`` would otherwise pass for optimum's
    (the config itself is read, and checked, when the graphs are opened).
    """
    folder = Path(folder)
    if (folder / GENAI_MARKER).is_file():
        return "genai"
    if any((folder / f).is_file() for f in SEQ2SEQ_MARKERS):
        return None
    for layout, files in CAUSAL_LAYOUT_FILES.items():
        if all((folder / f).is_file() for f in files):
            return layout
    return None


def detect_kind(folder: Path | str) -> str:
    """The model kind of a tier folder, told by its graphs (a decoder-only folder is looked for first)."""
    return "causal" if detect_causal_layout(Path(folder)) else "seq2seq"
