"""Writing quantized tiers: dynamic int8, static int8 (QDQ) and int4 MatMulNBits, from an fp32 tier folder.

Either model kind: an encoder-decoder folder quantizes its encoder and decoder graphs, a decoder-only one
(optimum's ``model.onnx``, or its older split and merged layouts) its one or two graphs; which graphs a folder
holds is read as the engine reads it (:func:`folder_graphs`).

Quantization is part of measure rather than a one-off script, so every
quantized tier states how it was made (``tier.json`` ``quantization``) and
can be rebuilt from its source with one command. Static int8 fixes its
activation scales ahead of time, so it is calibrated on the inputs the graphs
really see: the feeds of greedy decodes of calibration sources, recorded call
by call from the fp32 tier, and the file they came from is recorded by sha256.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from measure.engine.fingerprint import graph_fingerprint
from measure.engine.kind import CAUSAL_LAYOUT_FILES, detect_causal_layout
from measure.engine.load import load_tier
from measure.engine.meta import read_meta
from measure.engine.seq2seq.graphs import LAYOUT_FILES
from measure.errors import MeasureError
from measure.suites.golden import GoldenRows, load_golden
from measure.tools.matmul_groups import WeightMatMul, graph_matmuls
from measure.tools.onnxruntime_quantizers import Feeds, quantize_graph
from measure.tools.recipes import ACCURACY_LEVELS, BLOCK_SIZES, LEGACY, NAMED, Recipe
from measure.writing import make_dirs, reason, write_text

TARGETS = LEGACY

CALIBRATION_TOKENS = 16
"""A decoder-only calibration decode stops after this many new tokens: the prompt's prefill and the first steps
on its cache carry the activations the graph sees, and each recorded call holds a copy of the whole cache (a
full-length decode of a 135M-parameter model would keep gigabytes of feeds)."""


def folder_graphs(folder: Path) -> tuple[str, tuple[str, ...]]:
    """The model kind's layout and its graph files, as the engine reads the folder; one line when it holds neither
    kind's set (naming what each kind needs and what was found), or is an onnxruntime-genai folder."""
    causal = detect_causal_layout(folder) if folder.is_dir() else None
    if causal == "genai":
        raise MeasureError(
            f"{folder}: an onnxruntime-genai folder (genai_config.json); quantize its source model with "
            "onnxruntime-genai's model builder, or quantize the optimum export it came from"
        )
    if causal is not None:
        return causal, CAUSAL_LAYOUT_FILES[causal]
    for layout, files in LAYOUT_FILES.items():
        if all((folder / f).is_file() for f in files):
            return layout, files
    found = sorted(p.name for p in folder.glob("*.onnx")) if folder.is_dir() else []
    raise MeasureError(
        f"{folder}: no complete set of model graphs: an encoder-decoder tier needs encoder_model.onnx with "
        "decoder_model.onnx + decoder_with_past_model.onnx or decoder_model_merged.onnx, or encoder.onnx + "
        "decoder-kv.onnx; a decoder-only tier model.onnx, decoder_model_merged.onnx, or decoder_model.onnx + "
        f"decoder_with_past_model.onnx; found {', '.join(found) or 'no .onnx files'}"
    )


def record_feeds(src: Path, calibration: GoldenRows, rows: int) -> dict[str, Feeds]:
    """Greedy-decode the first ``rows`` calibration sources with the fp32 tier; every graph's feeds, by file name.

    A decoder-only tier decodes each source under its prompt template, at most :data:`CALIBRATION_TOKENS` new
    tokens: the prompt's prefill call and the steps after it.
    """
    tier = load_tier(src)
    causal = tier.kind == "causal"
    sessions = tier.graph_sessions()
    for session in sessions:
        session.recorded = []
    for row in calibration.rows[:rows]:
        try:
            ids = tier.source_ids(row.input)
            limit = min(tier.default_max_new_tokens(len(ids)), CALIBRATION_TOKENS) if causal else None
            tier.greedy_ids(ids, max_new_tokens=limit)
        except MeasureError as exc:
            raise MeasureError(f"{calibration.path}:{row.line}: cannot decode this calibration source ({exc})") from exc
    return {session.path.name: session.recorded or [] for session in sessions}


def accuracy_effect(level: int) -> str:
    """What a MatMulNBits accuracy level means for speed on CPU, in words (``measure quantize --to int4`` says it)."""
    return ACCURACY_EFFECT.get(level, f"accuracy_level {level}")


ACCURACY_EFFECT = {
    0: "accuracy_level 0 (unset, computed as 1: fp32): the weights are unpacked to fp32 and multiplied in fp32, "
    "which on CPU can decode slower than dynamic int8 of the same model; --accuracy-level 4 multiplies with int8 "
    "activations (what onnxruntime-genai's model builder writes for CPU), usually the fastest MatMulNBits",
    1: "accuracy_level 1 (fp32): the weights are unpacked to fp32 and multiplied in fp32, which on CPU can "
    "decode slower than dynamic int8 of the same model",
    2: "accuracy_level 2 (fp16): multiplied in fp16 where the CPU has fp16 kernels, else as fp32",
    3: "accuracy_level 3 (bf16): multiplied in bf16 where the CPU has bf16 kernels, else as fp32",
    4: "accuracy_level 4 (int8): activations quantized to int8 per block and multiplied with int8 kernels: on CPU "
    "usually the fastest MatMulNBits, ahead of dynamic int8",
}


def _check_arguments(
    to: str, block_size: int, accuracy_level: int | None, calibration: Path | str | None, calibration_rows: int | None
) -> None:
    """The options, each refused in one line naming it, before any file is read."""
    if to not in TARGETS:
        raise MeasureError(f"quantize --to: expected one of {', '.join(TARGETS)}, got {to!r}")
    if block_size not in BLOCK_SIZES:
        raise MeasureError(
            f"quantize --block-size: expected a power of two from {BLOCK_SIZES[0]} to {BLOCK_SIZES[-1]} "
            f"({', '.join(map(str, BLOCK_SIZES))}: what MatMulNBits supports), got {block_size}"
        )
    if accuracy_level is not None and accuracy_level not in ACCURACY_LEVELS:
        raise MeasureError(
            f"quantize --accuracy-level: expected one of {', '.join(map(str, ACCURACY_LEVELS))} "
            f"(0 unset, 1 fp32, 2 fp16, 3 bf16, 4 int8), got {accuracy_level}"
        )
    if to != "int4" and accuracy_level is not None:
        raise MeasureError("quantize --accuracy-level: only with --to int4 (it is a MatMulNBits setting)")
    if (to == "int8-static") != (calibration is not None):
        raise MeasureError(
            "quantize --calibration: int8-static needs a calibration rows file (and only int8-static takes one)"
        )
    if calibration_rows is not None and calibration is None:
        raise MeasureError("quantize --calibration-rows: only with --calibration")


def quantize_tier(
    src: Path | str,
    dst: Path | str,
    to: str,
    *,
    block_size: int = 32,
    accuracy_level: int | None = None,
    calibration: Path | str | None = None,
    calibration_rows: int | None = None,
) -> Path:
    """Quantize every graph of ``src`` into ``dst`` by a ``--to`` target (a named recipe, its block size and
    accuracy level given apart); other files (tokenizer, metadata) are copied.

    ``int8-static`` needs ``calibration``: a golden-rows file whose first
    ``calibration_rows`` sources (all by default) are decoded to record feeds.
    Keep it apart from the golden rows the tier is judged on.
    """
    _check_arguments(to, block_size, accuracy_level, calibration, calibration_rows)
    recipe = replace(NAMED[to], calibration_rows=calibration_rows)
    if to == "int4":
        recipe = replace(recipe, block_size=block_size, accuracy_level=accuracy_level)
    return quantize_recipe(src, dst, recipe, calibration=calibration)


def quantize_recipe(src: Path | str, dst: Path | str, recipe: Recipe, *, calibration: Path | str | None = None) -> Path:
    """Quantize every graph of the full-precision tier ``src`` into ``dst`` as ``recipe`` says, the MatMuls it
    keeps left as they are; ``tier.json`` ``quantization.recipe`` records the recipe. A static-int8 recipe needs
    ``calibration`` (a golden-rows file), any other refuses one. Nothing is written unless the whole tier is."""
    src, dst = Path(src), Path(dst)
    if (recipe.method == "static-int8") != (calibration is not None):
        raise MeasureError(
            f"quantize --calibration: recipe {recipe.name} ({recipe.method}) "
            + ("needs a calibration rows file" if calibration is None else "takes no calibration rows file")
            + " (only static-int8 is calibrated)"
        )
    layout, graphs = folder_graphs(src)
    require_full_precision(src, graphs)
    kept = _kept(src, graphs, recipe)
    rows = cal = None
    if calibration is not None:
        cal = load_golden(calibration)
        rows = len(cal) if recipe.calibration_rows is None else recipe.calibration_rows
        if not 1 <= rows <= len(cal):
            raise MeasureError(
                f"quantize --calibration-rows: expected 1 to {len(cal)} (the rows in {cal.path}), got {rows}"
            )
    if dst.resolve() == src.resolve():
        raise MeasureError(f"{dst}: the output folder must differ from the source tier")
    if dst.is_symlink():
        raise MeasureError(f"{dst}: is a symbolic link; expected a new or empty folder")
    if dst.exists() and not dst.is_dir():
        raise MeasureError(f"{dst}: is a file; expected a new or empty folder for the quantized tier")
    if dst.exists() and any(dst.iterdir()):
        raise MeasureError(f"{dst}: output folder is not empty; expected a new or empty folder")
    feeds = record_feeds(src, cal, rows) if cal is not None and rows is not None else {}
    make_dirs(dst.parent)
    try:
        building = Path(tempfile.mkdtemp(prefix=f".{dst.name}.", suffix=".partial", dir=dst.parent))
    except OSError as exc:
        raise MeasureError(f"{dst.parent}: cannot create a folder here ({reason(exc)})") from exc
    try:
        _build(src, building, dst.name, recipe, (layout, graphs), kept, cal, rows, feeds)
        if dst.is_dir():
            dst.rmdir()  # empty, checked above
        building.rename(dst)
    except OSError as exc:
        raise MeasureError(f"{dst}: cannot write the quantized tier ({reason(exc)})") from exc
    finally:
        shutil.rmtree(building, ignore_errors=True)  # gone already when renamed; a failure leaves nothing
    return dst


def require_full_precision(src: Path, graphs: tuple[str, ...]) -> None:
    """A recipe is applied to full precision: quantizing a quantized tier again stacks two errors, and the tier
    it makes would name the wrong source as its reference."""
    for graph in graphs:
        found = graph_fingerprint(src / graph)
        if found.precision not in ("fp32", "fp16"):
            raise MeasureError(
                f"{src / graph}: is {found.precision}, not full precision; quantize the fp32 (or fp16) tier "
                "it was made from"
            )


def _kept(src: Path, graphs: tuple[str, ...], recipe: Recipe) -> dict[str, tuple[str, ...]]:
    """The MatMuls each graph keeps in full precision; a keep entry that names nothing in any graph (a misspelt
    node, a layer past the last) is refused, since a recipe that silently keeps nothing measures the wrong thing."""
    if not recipe.keep:
        return {}
    found: dict[str, tuple[WeightMatMul, ...]] = {graph: graph_matmuls(src / graph) for graph in graphs}
    unmatched = recipe.keep.unmatched(tuple(m for ms in found.values() for m in ms))
    if unmatched:
        raise MeasureError(
            f"recipe {recipe.name}: {unmatched[0]} names no weight MatMul in {src} (its graphs: {', '.join(graphs)})"
        )
    return {graph: recipe.keep.kept(ms) for graph, ms in found.items()}


def _private_copy(src: Path, graphs: tuple[str, ...], work: Path) -> Path:
    """The graphs and the folder's other top-level files but ``.onnx`` ones (external weights such as
    ``model.onnx.data``) copied into ``work``, the folder the quantizers are given: onnxruntime's write beside the
    graph they read (its dynamic quantizer ``<graph>-inferred.onnx``, removed after, a user's file of that name
    with it), so they never see the source folder, which may be read-only and is never changed."""
    work.mkdir(parents=True)
    for path in sorted(src.iterdir()):
        if path.is_file() and (path.name in graphs or path.suffix != ".onnx"):
            try:
                shutil.copyfile(path, work / path.name)
            except OSError as exc:
                where = exc.filename or path  # the file it could not read, or the copy it could not write
                raise MeasureError(f"{where}: cannot copy it to quantize from ({reason(exc)})") from exc
    return work


def _build(
    src: Path,
    dst: Path,
    name: str,
    recipe: Recipe,
    layout_graphs: tuple[str, tuple[str, ...]],
    kept: dict[str, tuple[str, ...]],
    cal: GoldenRows | None,
    rows: int | None,
    feeds: dict[str, Feeds],
) -> None:
    """Write the whole quantized tier into ``dst`` (a temporary folder renamed into place by the caller)."""
    layout, graphs = layout_graphs
    params = _quantize_graphs(src, dst, recipe, graphs, kept, feeds)
    if cal is not None:
        params["calibration"] = {
            "file": cal.path.name,
            "sha256": cal.sha256,
            "rows": rows,
            "feeds": {graph: len(feeds.get(graph, [])) for graph in graphs},
        } | ({"max_new_tokens": CALIBRATION_TOKENS} if layout.startswith("causal") else {})
    for path in src.iterdir():
        if path.is_file() and path.name not in graphs and path.suffix != ".onnx" and path.name != "tier.json":
            shutil.copy2(path, dst / path.name)
    meta = read_meta(src) if (src / "tier.json").is_file() else {}
    meta = {k: v for k, v in meta.items() if k in _TIER_KEYS}
    meta["name"] = name
    meta["note"] = f"{recipe.label} of {src.name}"  # the source's note describes the source, not this tier
    meta["quantization"] = params | {"from": src.name, "recipe": recipe.to_dict()}
    if kept:
        meta["quantization"]["kept"] = {graph: list(names) for graph, names in kept.items()}
    write_text(dst / "tier.json", json.dumps(meta, indent=2, ensure_ascii=False) + "\n", root=dst)
    os.chmod(dst, 0o755)  # mkdtemp makes 0700; a tier folder is meant to be read


def _quantize_graphs(
    src: Path,
    dst: Path,
    recipe: Recipe,
    graphs: tuple[str, ...],
    kept: dict[str, tuple[str, ...]],
    feeds: dict[str, Feeds],
) -> dict[str, Any]:
    """Every graph of ``src`` quantized from a private copy into ``dst``; the last quantizer's settings (one
    recipe, so every graph's are alike), none when every graph was kept whole and copied."""
    params: dict[str, Any] = {}
    work = dst / ".work"
    private = _private_copy(src, graphs, work / "src")
    (work / "out").mkdir()
    (work / "tmp").mkdir()
    whole = {g for g in graphs if kept.get(g) and len(kept[g]) == len(graph_matmuls(private / g))}
    if whole == set(graphs):
        raise MeasureError(f"recipe {recipe.name}: keeps every weight MatMul of {src} in full precision")
    logging.disable(logging.WARNING)  # onnxruntime's quantizers advise pre-processing on the root logger
    system_tmp, tempfile.tempdir = tempfile.tempdir, str(work / "tmp")  # their temporary models stay in here too
    try:
        for graph in graphs:
            out = work / "out" / graph
            if graph in whole:  # nothing left to quantize: the graph is copied as it is
                shutil.copyfile(private / graph, out)
            else:
                params = quantize_graph(
                    src / graph, private / graph, out, recipe, feeds.get(graph, []), kept.get(graph, ())
                )
            out.rename(dst / graph)
    finally:
        logging.disable(logging.NOTSET)
        tempfile.tempdir = system_tmp
        shutil.rmtree(work, ignore_errors=True)
    return params


_TIER_KEYS = {
    "tokenizer",
    "pad_token_id",
    "eos_token_id",
    "decoder_start_token_id",
    "bos_token_id",
    "prompt",
    "max_source_tokens",
    "max_target_tokens",
    "num_heads",
    "head_dim",
    "vocab_size",
    "note",
    "model",
}
