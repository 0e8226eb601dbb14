"""Quantization recipes as data: which quantizer, its settings, and which MatMuls stay in full precision.

A recipe is what ``measure quantize --recipe`` makes a tier from and what ``tier.json`` ``quantization.recipe``
records, so a tier says how it was made in terms a user can edit and rerun. The named recipes (:data:`NAMED`)
include the ``--to`` targets with their settings unchanged; a recipe file (TOML) names a method and its settings,
or starts from a named recipe (``base``) and changes some. Parsing is strict: an unknown key, a setting the method
does not take, or a value the quantizer does not support is one line naming the file and the key.

The settings are onnxruntime's: ``quantize_dynamic`` and ``quantize_static`` (int8, per tensor or per channel) and
``MatMulNBitsQuantizer`` (weight-only, 4 or 8 bits, per block, symmetric or not, and the ``accuracy_level`` that
decides what its CPU kernel multiplies in: unset/1 fp32, 4 int8 activations).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from measure.errors import MeasureError
from measure.tools.matmul_groups import WeightMatMul

METHODS = ("dynamic-int8", "static-int8", "matmul-nbits")
BITS = (4, 8)
BLOCK_SIZES = (16, 32, 64, 128, 256)
"""The block sizes MatMulNBits takes (onnxruntime's CPU kernels: powers of two from 16 to 256); a larger one
passes the quantizer's own check and ends allocating terabytes."""
ACCURACY_LEVELS = (0, 1, 2, 3, 4)
"""MatMulNBits ``accuracy_level``: what its kernel multiplies in (0 unset, as 1; 1 fp32, 2 fp16, 3 bf16, 4 int8)."""
CALIBRATE_METHODS = ("MinMax", "Entropy", "Percentile")
KEEP_GROUPS = ("attention", "mlp", "lm_head")
_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@dataclass(frozen=True)
class Keep:
    """The weight MatMuls a recipe leaves in full precision; a MatMul is kept when any entry names it."""

    groups: tuple[str, ...] = ()
    """Whole groups: ``attention`` (the q/k/v/o projections), ``mlp``, ``lm_head``."""
    layers: tuple[int, ...] = ()
    """Transformer blocks by index (0 is the first), every weight MatMul in them."""
    first: int = 0
    """The first N blocks of each graph."""
    last: int = 0
    """The last N blocks of each graph."""
    nodes: tuple[str, ...] = ()
    """MatMul nodes by their exact name in the graph (``/model/layers.3/mlp/down_proj/MatMul``)."""

    def __bool__(self) -> bool:
        return bool(self.groups or self.layers or self.first or self.last or self.nodes)

    def kept(self, matmuls: tuple[WeightMatMul, ...]) -> tuple[str, ...]:
        """The names of the MatMuls of one graph this keeps, in graph order."""
        layers = sorted({m.layer for m in matmuls if m.layer is not None})
        chosen = set(self.layers) | set(layers[: self.first]) | (set(layers[-self.last :]) if self.last else set())
        names = [
            m.node
            for m in matmuls
            if m.group in self.groups or (m.layer is not None and m.layer in chosen) or m.node in self.nodes
        ]
        return tuple(dict.fromkeys(names))

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "groups": list(self.groups),
            "layers": list(self.layers),
            "first": self.first,
            "last": self.last,
            "nodes": list(self.nodes),
        }
        return {k: v for k, v in d.items() if v}

    def unmatched(self, matmuls: tuple[WeightMatMul, ...]) -> list[str]:
        """The entries that name no MatMul of the tier (a misspelt node, a layer past the last): ``keep.nodes``
        entries and the like, for the error that refuses the recipe."""
        names = {m.node for m in matmuls}
        layers = {m.layer for m in matmuls}
        found = {m.group for m in matmuls}
        return (
            [f"keep.groups: {g!r}" for g in self.groups if g not in found]
            + [f"keep.layers: {i}" for i in self.layers if i not in layers]
            + [f"keep.nodes: {n!r}" for n in self.nodes if n not in names]
        )


@dataclass(frozen=True)
class Recipe:
    """One way to quantize a full-precision tier, complete: the same recipe of the same source is the same tier."""

    name: str
    """Names the recipe and, in ``measure explore``, the tier it makes (lower case, digits, ``.``, ``_``, ``-``)."""
    method: str
    """``dynamic-int8`` (``quantize_dynamic``), ``static-int8`` (``quantize_static``, QDQ, calibrated) or
    ``matmul-nbits`` (``MatMulNBitsQuantizer``, weight-only)."""
    bits: int = 8
    """Weight bits: 4 or 8 for matmul-nbits; 8 for the int8 methods."""
    per_channel: bool = False
    """int8 methods: one scale per output channel instead of one per tensor."""
    block_size: int = 32
    """matmul-nbits: weights per scale, a power of two from 16 to 256."""
    symmetric: bool = True
    """Symmetric weights (no zero point); matmul-nbits can also be asymmetric."""
    accuracy_level: int | None = None
    """matmul-nbits: what the kernel multiplies in: 0 (or unset) and 1 fp32, 2 fp16, 3 bf16, 4 int8."""
    calibrate_method: str = "MinMax"
    """static-int8: how activation ranges are found from the calibration feeds (MinMax, Entropy, Percentile)."""
    calibration_rows: int | None = None
    """static-int8: how many calibration rows to decode (all when unset)."""
    keep: Keep = field(default_factory=Keep)
    """The MatMuls left in full precision."""

    @property
    def label(self) -> str:
        """How a tier's note says what made it (``dynamic int8``, ``8-bit MatMulNBits, block 32, accuracy 4``)."""
        if self.method == "dynamic-int8":
            text = "dynamic int8" + (", per-channel" if self.per_channel else "")
        elif self.method == "static-int8":
            text = "static int8 (QDQ, calibrated)" + (", per-channel" if self.per_channel else "")
        else:
            text = f"{'int4' if self.bits == 4 else '8-bit'} MatMulNBits"
            if self.name not in LEGACY:
                level = "unset" if self.accuracy_level is None else self.accuracy_level
                text += f", block {self.block_size}, accuracy {level}" + ("" if self.symmetric else ", asymmetric")
        if not self.symmetric and self.method != "matmul-nbits":
            text += ", asymmetric"
        return text + (f", {_keep_label(self.keep)} kept in fp32" if self.keep else "")

    def to_dict(self) -> dict[str, Any]:
        """The settings that apply to its method, as ``tier.json`` and a run record store them."""
        d: dict[str, Any] = {"name": self.name, "method": self.method, "bits": self.bits}
        if self.method == "matmul-nbits":
            d |= {"block_size": self.block_size, "symmetric": self.symmetric, "accuracy_level": self.accuracy_level}
        else:
            d |= {"per_channel": self.per_channel, "symmetric": self.symmetric}
        if self.method == "static-int8":
            d |= {"calibrate_method": self.calibrate_method, "calibration_rows": self.calibration_rows}
        if self.keep:
            d["keep"] = self.keep.to_dict()
        return d


def _keep_label(keep: Keep) -> str:
    parts = [*keep.groups, *(f"layer {i}" for i in keep.layers)]
    parts += [f"first {keep.first} layers"] if keep.first else []
    parts += [f"last {keep.last} layers"] if keep.last else []
    parts += [f"{len(keep.nodes)} named MatMuls"] if keep.nodes else []
    return ", ".join(parts)


NAMED: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe("int8", "dynamic-int8"),
        Recipe("int8-static", "static-int8"),
        Recipe("int4", "matmul-nbits", bits=4),
        Recipe("int8-per-channel", "dynamic-int8", per_channel=True),
        Recipe("int4-level4", "matmul-nbits", bits=4, accuracy_level=4),
        Recipe("int4-asym", "matmul-nbits", bits=4, symmetric=False),
        Recipe("int8-nbits", "matmul-nbits", bits=8, accuracy_level=4),
        Recipe("int8-nbits-level0", "matmul-nbits", bits=8, accuracy_level=0),
    )
}
"""The named recipes. ``int8``, ``int8-static`` and ``int4`` are ``measure quantize --to``'s targets with their
settings unchanged; ``int8-nbits`` is weight-only int8 (8-bit MatMulNBits, block 32, int8 kernels)."""
LEGACY = ("int8", "int8-static", "int4")
"""The ``--to`` targets, whose tier notes keep their wording."""

_KEYS = {f.name for f in fields(Recipe)} | {"base"}
_ONLY = {
    "per_channel": ("dynamic-int8", "static-int8"),
    "block_size": ("matmul-nbits",),
    "accuracy_level": ("matmul-nbits",),
    "calibrate_method": ("static-int8",),
    "calibration_rows": ("static-int8",),
}
"""The settings that only some methods take; stating one for another method is an error, not a silent no-op."""


def _int(value: Any, where: str, allowed: tuple[int, ...] | None = None, low: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MeasureError(f"{where}: expected an integer, got {value!r}")
    if allowed is not None and value not in allowed:
        raise MeasureError(f"{where}: expected one of {', '.join(map(str, allowed))}, got {value}")
    if low is not None and value < low:
        raise MeasureError(f"{where}: expected an integer of at least {low}, got {value}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise MeasureError(f"{where}: expected true or false, got {value!r}")
    return value


def _strings(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise MeasureError(f"{where}: expected a list of non-empty strings, got {value!r}")
    return tuple(value)


def _keep(value: Any, where: str) -> Keep:
    if not isinstance(value, dict):
        raise MeasureError(f"{where}: expected a table (groups, layers, first, last, nodes), got {value!r}")
    unknown = sorted(set(value) - {f.name for f in fields(Keep)})
    if unknown:
        raise MeasureError(f"{where}.{unknown[0]}: unknown key; expected groups, layers, first, last or nodes")
    groups = _strings(value.get("groups", []), f"{where}.groups")
    for g in groups:
        if g not in KEEP_GROUPS:
            raise MeasureError(f"{where}.groups: expected {', '.join(KEEP_GROUPS)}, got {g!r}")
    layers = value.get("layers", [])
    if not isinstance(layers, list):
        raise MeasureError(f"{where}.layers: expected a list of layer indices, got {layers!r}")
    return Keep(
        groups=groups,
        layers=tuple(_int(i, f"{where}.layers", low=0) for i in layers),
        first=_int(value.get("first", 0), f"{where}.first", low=0),
        last=_int(value.get("last", 0), f"{where}.last", low=0),
        nodes=_strings(value.get("nodes", []), f"{where}.nodes"),
    )


def parse_recipe(data: Any, where: str, default_name: str | None = None) -> Recipe:
    """One recipe from a parsed table (a TOML file's, a grid entry's, a ``tier.json`` record's); ``where`` prefixes
    every error (``recipe.toml: key block_size``). A table with ``base`` starts from that named recipe."""
    if not isinstance(data, dict):
        raise MeasureError(f"{where}: expected a table of recipe settings, got {data!r}")
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise MeasureError(f"{where}: key {unknown[0]}: unknown; expected {', '.join(sorted(_KEYS))}")
    base = _base(data, where)
    name = data.get("name") or default_name or (base.name if base else None)
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise MeasureError(
            f"{where}: key name: expected 1 to 64 of a-z, 0-9, '.', '_', '-' (starting with a letter or digit), "
            f"got {name!r}"
        )
    method = _method(data, where, base)
    start = base if base is not None else Recipe(name, method)
    return replace(start, name=name, method=method, **_settings(data, where, method))


def _base(data: dict[str, Any], where: str) -> Recipe | None:
    """The named recipe a table starts from (``base``), which fixes the method; None without one."""
    if "base" not in data:
        return None
    base = named_recipe(data["base"], f"{where}: key base")
    if "method" in data:
        raise MeasureError(f"{where}: key method: base {base.name!r} already sets it ({base.method})")
    return base


def _method(data: dict[str, Any], where: str, base: Recipe | None) -> str:
    """The table's method (or its base's), and each key the method does not take refused."""
    if base is None and "method" not in data:
        raise MeasureError(f"{where}: key method: missing; expected one of {', '.join(METHODS)} (or base = NAME)")
    method = base.method if base is not None else data["method"]
    if method not in METHODS:
        raise MeasureError(f"{where}: key method: expected one of {', '.join(METHODS)}, got {method!r}")
    if method == "matmul-nbits" and base is None and "bits" not in data:
        raise MeasureError(f"{where}: key bits: missing; method matmul-nbits takes 4 or 8")
    for key, methods in _ONLY.items():
        if key in data and method not in methods:
            raise MeasureError(f"{where}: key {key}: only for method {' or '.join(methods)}, not {method}")
    return str(method)


def _settings(data: dict[str, Any], where: str, method: str) -> dict[str, Any]:
    """The settings the table gives, each checked against what the quantizer supports (unset keys left out)."""
    settings: dict[str, Any] = {}
    if "bits" in data:
        settings["bits"] = _int(data["bits"], f"{where}: key bits", BITS if method == "matmul-nbits" else (8,))
    if "per_channel" in data:
        settings["per_channel"] = _bool(data["per_channel"], f"{where}: key per_channel")
    if "block_size" in data:
        settings["block_size"] = _int(data["block_size"], f"{where}: key block_size", BLOCK_SIZES)
    if "symmetric" in data:
        settings["symmetric"] = _bool(data["symmetric"], f"{where}: key symmetric")
    if "accuracy_level" in data and data["accuracy_level"] is not None:
        settings["accuracy_level"] = _int(data["accuracy_level"], f"{where}: key accuracy_level", ACCURACY_LEVELS)
    if "calibrate_method" in data:
        if data["calibrate_method"] not in CALIBRATE_METHODS:
            raise MeasureError(
                f"{where}: key calibrate_method: expected one of {', '.join(CALIBRATE_METHODS)}, "
                f"got {data['calibrate_method']!r}"
            )
        settings["calibrate_method"] = data["calibrate_method"]
    if "calibration_rows" in data and data["calibration_rows"] is not None:
        settings["calibration_rows"] = _int(data["calibration_rows"], f"{where}: key calibration_rows", low=1)
    if "keep" in data:
        settings["keep"] = _keep(data["keep"], f"{where}: key keep")
    return settings


def named_recipe(name: Any, where: str = "quantize --recipe") -> Recipe:
    """A named recipe; an unknown name is one line listing the names."""
    if not isinstance(name, str) or name not in NAMED:
        raise MeasureError(f"{where}: no recipe named {name!r}; expected one of {', '.join(NAMED)} or a .toml file")
    return NAMED[name]


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file as a table; unreadable, not UTF-8 or not TOML is one line naming the file (and the line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from exc
    except UnicodeDecodeError as exc:
        raise MeasureError(f"{path}: not UTF-8 text (byte {exc.start}); expected a TOML recipe file") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise MeasureError(f"{path}: not valid TOML ({exc})") from exc


def load_recipe_file(path: Path) -> Recipe:
    """A recipe file: one recipe's keys at the top level; its name defaults to the file's stem."""
    stem = re.sub(r"[^a-z0-9._-]", "-", path.stem.lower()).strip("-._") or "recipe"
    return parse_recipe(read_toml(path), str(path), default_name=stem)


def resolve_recipe(spec: str) -> Recipe:
    """``--recipe NAME|FILE``: a named recipe, or a path to a recipe file (anything ending ``.toml`` or that
    exists as a file)."""
    path = Path(spec)
    if spec.endswith(".toml") or path.is_file():
        if not path.is_file():
            raise MeasureError(f"{path}: no such recipe file")
        return load_recipe_file(path)
    return named_recipe(spec)
