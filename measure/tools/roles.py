"""Which role each tier plays and which tiers pair, proposed from the tiers' own files (``measure init``).

Read from the graphs (layout, precision, shape, model kind) and the tokenizer's
vocabulary, never from folder names.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from measure.engine.load import load_tier


@dataclass(frozen=True)
class TierFacts:
    """What a tier folder says about itself, as much as choosing roles and pairs needs."""

    path: Path
    name: str
    layout: str
    precision: str
    layers: int
    heads: int
    head_dim: int
    vocabulary: str
    """sha256 of the tokenizer's token -> id map: a drafter and a verifier must share it."""
    kind: str = "seq2seq"
    """``seq2seq`` or ``causal`` (decoder-only): pairs join tiers of one kind."""
    total_bytes: int = 0
    """Every file of the folder: what a budget is proposed from."""
    attention_heads: int | None = None
    """The query heads (config.json ``num_attention_heads``) where they differ from the key/value ``heads``."""

    @property
    def model(self) -> tuple[str, int, int, int, str]:
        """Tiers of the same kind, shape and vocabulary are precisions of one model."""
        return (self.kind, self.layers, self.heads, self.head_dim, self.vocabulary)

    @property
    def size(self) -> int:
        return self.layers * self.heads * self.head_dim

    def describe(self) -> str:
        if self.attention_heads and self.attention_heads != self.heads:
            heads = f"{self.attention_heads} attention heads ({self.heads} key/value) x {self.head_dim}"
        else:
            heads = f"{self.heads} heads x {self.head_dim}"
        return (
            f"{self.precision}, {'decoder-only, ' if self.kind == 'causal' else ''}"
            f"{self.layout} layout, {self.layers} layers, {heads}, {self.total_bytes / 1e6:.0f} MB, "
            f"vocabulary {self.vocabulary[:8]}"
        )


def read_tier(folder: Path) -> TierFacts:
    """Load the tier as ``measure run`` would (a bad folder is the same one-line error) and keep its facts."""
    tier = load_tier(folder)
    fp = tier.fingerprint()
    vocab = json.dumps(sorted(tier.tokenizer.vocabulary().items()), ensure_ascii=False)
    return TierFacts(
        path=folder,
        name=fp.name,
        layout=fp.layout,
        precision=fp.precision,
        layers=fp.layers,
        heads=fp.heads,
        head_dim=fp.head_dim,
        vocabulary=hashlib.sha256(vocab.encode("utf-8")).hexdigest(),
        kind=tier.kind,
        total_bytes=fp.total_bytes,
        attention_heads=_int(tier.meta.get("num_attention_heads")),
    )


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@dataclass(frozen=True)
class Proposed:
    """One tier as the config will list it."""

    name: str
    """Unique among the tiers: the tier's own name, numbered when two share it."""
    role: str
    facts: TierFacts


@dataclass(frozen=True)
class Proposal:
    """Roles for the tiers and the speculative pairs, with the reasons a user should read."""

    tiers: tuple[Proposed, ...]
    """In the order given."""
    pairs: tuple[tuple[str, str], ...]
    """(drafter, verifier) names."""
    notes: tuple[str, ...]


_PLAIN_PREFERENCE = ("int8-dynamic", "int8-static", "int8")


def propose(tiers: list[TierFacts]) -> Proposal:
    """Roles and pairs, as the bundled demo has them.

    plain: an int8 tier (dynamic first) of the largest model, the anchor of every
    ratio; reference: an fp32 tier of that model; lite: an int4 tier. The rest
    are verifiers (the largest model) or drafters. A smaller model's tier drafts
    for the largest model's tier of the same precision, else for plain, when the
    two share a vocabulary. Each model kind gets its roles and pairs on its own
    (pairs never join two kinds); the seq2seq tiers hold the one plain tier where
    there are any, and the other kind's anchor is a verifier.
    """
    names = _unique_names(tiers)
    kinds = sorted({t.kind for t in tiers}, key=lambda k: k != "seq2seq")
    roles: dict[Path, str] = {}
    pairs: list[tuple[str, str]] = []
    notes: list[str] = []
    for i, kind in enumerate(kinds):
        group = [t for t in tiers if t.kind == kind]
        found = _propose_kind(group, names, "plain" if i == 0 else "verifier")
        roles |= found[0]
        pairs += found[1]
        notes += found[2]
    return Proposal(tuple(Proposed(names[t.path], roles[t.path], t) for t in tiers), tuple(pairs), tuple(notes))


def _propose_kind(
    tiers: list[TierFacts], names: dict[Path, str], anchor: str
) -> tuple[dict[Path, str], list[tuple[str, str]], list[str]]:
    """Roles, pairs and notes for tiers of one kind; ``anchor``: the role of its int8 tier of the largest model."""
    notes: list[str] = []
    largest = max(t.size for t in tiers)
    big = [t for t in tiers if t.size == largest]
    plain = min(big, key=_plain_rank)
    if _plain_rank(plain) == len(_PLAIN_PREFERENCE) and anchor == "plain":
        notes.append(f"no int8 tier: {names[plain.path]} ({plain.precision}) is plain, the anchor of every ratio")
    roles = {plain.path: anchor}
    reference = next(
        (t for t in big if t is not plain and t.model == plain.model and t.precision in ("fp32", "fp16")), None
    )
    if reference is not None:
        roles[reference.path] = "reference"
    lite = next((t for t in tiers if t.precision.startswith("int4") and t.path not in roles), None)
    if lite is not None:
        roles[lite.path] = "lite"
    for t in tiers:
        roles.setdefault(t.path, "verifier" if t.model == plain.model else "drafter")
    pairs = _pairs(tiers, names, plain, big, notes)
    return roles, pairs, notes


def _plain_rank(t: TierFacts) -> int:
    """How much a tier is preferred as plain: its place in :data:`_PLAIN_PREFERENCE`, past the end if not int8."""
    return next((i for i, p in enumerate(_PLAIN_PREFERENCE) if t.precision.startswith(p)), len(_PLAIN_PREFERENCE))


def _pairs(
    tiers: list[TierFacts], names: dict[Path, str], plain: TierFacts, big: list[TierFacts], notes: list[str]
) -> list[tuple[str, str]]:
    """Each smaller model's tier drafting for the largest model's tier of its precision, else for plain; one that
    shares no vocabulary with plain gets a note in ``notes`` instead."""
    pairs: list[tuple[str, str]] = []
    for drafter in tiers:
        if drafter.size >= plain.size:
            continue
        if drafter.vocabulary != plain.vocabulary:
            notes.append(f"{names[drafter.path]} does not share {names[plain.path]}'s vocabulary: no speculative pair")
            continue
        same = next((t for t in big if t.model == plain.model and t.precision == drafter.precision), plain)
        pairs.append((names[drafter.path], names[same.path]))
    return pairs


def _unique_names(tiers: list[TierFacts]) -> dict[Path, str]:
    """Tier names as the config needs them: unique, the folder's own name first."""
    names: dict[Path, str] = {}
    for t in tiers:
        name, n = t.name, 1
        while name in names.values():
            n += 1
            name = f"{t.name}-{n}"
        names[t.path] = name
    return names
