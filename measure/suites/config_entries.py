"""The suite config's arrays of tables: ``[[tiers]]``, ``[[pairs]]`` and ``[[layouts]]``, each entry checked by hand.

Apart from :mod:`measure.suites.config` (the tables, whose keys and types come from their dataclasses) because each
entry's keys are checked one by one, with messages naming ``tiers[i].key``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from measure.engine.kind import detect_kind
from measure.errors import MeasureError

ROLES = ("reference", "plain", "lite", "drafter", "verifier")
TIER_KEYS = ("name", "path", "role", "prompt", "max_new_tokens", "reference", "model")


@dataclass(frozen=True)
class TierSpec:
    name: str
    """How pages and records call the tier."""
    path: Path
    """The tier folder."""
    role: str
    """reference, plain, lite, drafter or verifier; exactly one plain tier anchors the ratios."""
    prompt: str | None = None
    """A decoder-only tier's prompt template (holding ``{input}``), overriding its tier.json's; None: tier.json's."""
    max_new_tokens: int | None = None
    """This tier's decode length in every suite, over ``[wallclock]``/``[framing]`` ``max_new_tokens``; None: theirs."""
    reference: str | None = None
    """The full-precision tier the fidelity pass judges this one against: a tier name of the config, or a folder
    (relative to the config); None: its tier.json ``quantization.from``, else the tier its graphs tell."""
    model: str | None = None
    """The model this tier is an export of (tiers naming one model are judged as one, whichever tool exported them),
    over its tier.json's ``model``; None: tier.json's, else its fidelity reference's model, else its own name."""
    kind: str = field(default="seq2seq", metadata={"derived": True})
    """``seq2seq`` or ``causal``, told by the folder's graphs once, when the config is read (not a config key)."""

    def to_dict(self) -> dict[str, Any]:
        return (
            {"name": self.name, "path": str(self.path), "role": self.role}
            | ({"prompt": self.prompt} if self.prompt is not None else {})
            | ({"max_new_tokens": self.max_new_tokens} if self.max_new_tokens is not None else {})
            | ({"reference": self.reference} if self.reference is not None else {})
            | ({"model": self.model} if self.model is not None else {})
        )


@dataclass(frozen=True)
class PairSpec:
    drafter: str
    """Name of the drafter tier."""
    verifier: str
    """Name of the verifier tier."""

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"


@dataclass(frozen=True)
class LayoutSpec:
    """Two layouts of one model's weights, timed against each other: what the layout alone costs."""

    name: str
    """How the finding names the model (usually its tier)."""
    merged: Path
    """The tier folder with ``decoder_model_merged.onnx`` (one ``If`` graph)."""
    split: Path
    """The tier folder with the split decoder (``decoder_model.onnx`` + ``decoder_with_past_model.onnx``)."""

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "merged": str(self.merged), "split": str(self.split)}


def new_tokens(value: Any, where: str) -> int | None:
    """A ``max_new_tokens`` value: None (unset) or an integer >= 1; anything else is one line naming the key."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise MeasureError(f"{where}: expected an integer >= 1 (new tokens a decode may add), got {value!r}")
    return value


def _entries(entries: list[Any], section: str, keys: tuple[str, ...], path: Path) -> list[tuple[int, dict[str, Any]]]:
    """An array of tables' entries, each a table holding no key but ``keys``, numbered as messages name them."""
    out = []
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict):
            holds = f"{', '.join(keys[:-1])} and {keys[-1]}"
            raise MeasureError(f"{path}: {section}[{i}]: expected a table with {holds}, got {entry!r}")
        extra = set(entry) - set(keys)
        if extra:
            raise MeasureError(f"{path}: unknown key {section}[{i}].{sorted(extra)[0]}; expected {', '.join(keys)}")
        out.append((i, entry))
    return out


def _folder(base: Path, value: str, where: str, path: Path) -> Path:
    """A folder named relative to the config file, resolved; one that is not there is an error naming the key."""
    folder = (base / value).resolve()
    if not folder.is_dir():
        raise MeasureError(f"{path}: {where} = {value!r}: folder not found at {folder}")
    return folder


def tiers_of(entries: list[Any], base: Path, path: Path) -> tuple[TierSpec, ...]:
    """``[[tiers]]``: named, unique, existing folders, a known role each, and exactly one plain tier."""
    tiers = [_tier(i, t, base, path) for i, t in _entries(entries, "tiers", TIER_KEYS, path)]
    names = [t.name for t in tiers]
    if not tiers:
        raise MeasureError(f"{path}: no [[tiers]]; expected at least one tier")
    if len(set(names)) != len(names):
        raise MeasureError(f"{path}: tier names must be unique; got {', '.join(names)}")
    if sum(t.role == "plain" for t in tiers) != 1:
        raise MeasureError(f'{path}: expected exactly one tier with role = "plain" (ratios are against it)')
    return tuple(tiers)


def _tier(i: int, t: dict[str, Any], base: Path, path: Path) -> TierSpec:
    """One ``[[tiers]]`` entry, each key checked in the order the loader always checked them."""
    for key in ("name", "path", "role"):
        if not isinstance(t.get(key), str):
            raise MeasureError(f"{path}: tiers[{i}].{key}: expected a string")
    if not t["name"]:
        raise MeasureError(f"{path}: tiers[{i}].name: expected a non-empty string")
    if t["role"] not in ROLES:
        raise MeasureError(f"{path}: tiers[{i}].role: expected one of {', '.join(ROLES)}, got {t['role']!r}")
    prompt = t.get("prompt")
    if prompt is not None and (not isinstance(prompt, str) or "{input}" not in prompt):
        raise MeasureError(
            f"{path}: tiers[{i}].prompt: expected a template containing {{input}} (where the source text goes), "
            f"got {prompt!r}"
        )
    limit = new_tokens(t.get("max_new_tokens"), f"{path}: tiers[{i}].max_new_tokens")
    reference = t.get("reference")
    if reference is not None and (not isinstance(reference, str) or not reference):
        raise MeasureError(f"{path}: tiers[{i}].reference: expected a tier name or a folder, got {reference!r}")
    model = t.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise MeasureError(f"{path}: tiers[{i}].model: expected the name of the model it exports, got {model!r}")
    folder = _folder(base, t["path"], f"tiers[{i}].path", path)
    kind = detect_kind(folder)
    if prompt is not None and kind != "causal":
        raise MeasureError(
            f"{path}: tiers[{i}].prompt: {t['name']} is an encoder-decoder tier; a prompt template is for "
            "decoder-only tiers"
        )
    return TierSpec(t["name"], folder, t["role"], prompt, limit, reference, model, kind)


def pairs_of(entries: list[Any], names: list[str], path: Path) -> tuple[PairSpec, ...]:
    """``[[pairs]]``: a drafter and a verifier, each the name of a tier."""
    pairs = []
    for i, p in _entries(entries, "pairs", ("drafter", "verifier"), path):
        for key in ("drafter", "verifier"):
            if p.get(key) not in names:
                raise MeasureError(f"{path}: pairs[{i}].{key} = {p.get(key)!r}: expected one of {', '.join(names)}")
        pairs.append(PairSpec(p["drafter"], p["verifier"]))
    return tuple(pairs)


def layouts_of(entries: list[Any], base: Path, path: Path) -> tuple[LayoutSpec, ...]:
    """``[[layouts]]``: a unique name and two existing tier folders, merged and split."""
    out = []
    for i, v in _entries(entries, "layouts", ("name", "merged", "split"), path):
        for key in ("name", "merged", "split"):
            if not isinstance(v.get(key), str) or not v[key]:
                raise MeasureError(f"{path}: layouts[{i}].{key}: expected a non-empty string")
        merged, split = (_folder(base, v[key], f"layouts[{i}].{key}", path) for key in ("merged", "split"))
        out.append(LayoutSpec(v["name"], merged, split))
    names = [v.name for v in out]
    if len(set(names)) != len(names):
        raise MeasureError(f"{path}: layouts names must be unique; got {', '.join(names)}")
    return tuple(out)
