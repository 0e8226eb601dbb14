"""Speculative acceptance as the framing section stores it (``framing.acceptance``), and the Counts the genai leg's
pairs share: each class reads (``from_dict``) and writes (``to_dict``) its part beside the builders the suite calls.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from measure.record.model.section import KEY

Part = dict[str, Any]


@dataclass(frozen=True)
class Counts:
    """Draft tokens accepted of those proposed."""

    accepted: int
    proposed: int

    @property
    def ratio(self) -> float | None:
        return self.accepted / self.proposed if self.proposed else None

    @classmethod
    def from_dict(cls, c: Part | None) -> Counts:
        """A missing part counts nothing (a pair that never ran)."""
        return cls(int((c or {}).get("accepted", 0)), int((c or {}).get("proposed", 0)))

    def to_dict(self) -> Part:
        return {"accepted": self.accepted, "proposed": self.proposed}


@dataclass(frozen=True)
class Differing:
    """A row whose speculative output is not the verifier's greedy one."""

    line: int
    input: str
    speculative: str
    greedy: str

    @classmethod
    def from_dict(cls, d: Part) -> Differing:
        return cls(int(d["line"]), d["input"], d["speculative"], d["greedy"])

    def to_dict(self) -> Part:
        return differing(self.line, self.input, self.speculative, self.greedy)


@dataclass(frozen=True)
class Acceptance:
    """A drafter/verifier pair at the probe k: acceptance three ways and output preservation."""

    drafter: str
    verifier: str
    self_pair: bool = field(metadata={KEY: "self"})
    """Stored as ``self`` (a name Python keeps); spelled out so mypy sees a field without a default."""
    k: int
    probe: Counts
    runtime: Counts
    rows: int
    preserved: int
    differing: tuple[Differing, ...]

    @property
    def name(self) -> str:
        return f"{self.drafter}->{self.verifier}"

    @classmethod
    def from_dict(cls, a: Part) -> Acceptance:
        return cls(
            drafter=a["drafter"],
            verifier=a["verifier"],
            self_pair=bool(a["self"]),
            k=int(a["k"]),
            probe=Counts.from_dict(a["probe"]),
            runtime=Counts.from_dict(a["runtime"]),
            rows=int(a["rows"]),
            preserved=int(a["preserved"]),
            differing=tuple(Differing.from_dict(d) for d in a["differing"]),
        )

    def to_dict(self) -> Part:
        return {
            "drafter": self.drafter,
            "verifier": self.verifier,
            "self": self.self_pair,
            "k": self.k,
            "probe": self.probe.to_dict(),
            "runtime": self.runtime.to_dict(),
            "rows": self.rows,
            "preserved": self.preserved,
            "differing": [d.to_dict() for d in self.differing],
        }


def differing(line: int, source: str, speculative: str, greedy: str) -> Part:
    """A row whose speculative output is not the verifier's greedy one."""
    return {"line": line, "input": source, "speculative": speculative, "greedy": greedy}


def acceptance_part(
    drafter: str,
    verifier: str,
    is_self: bool,
    k: int,
    probe: tuple[int, int],
    runtime: tuple[int, int],
    rows: int,
    differs: list[Part],
) -> Part:
    """One pair's acceptance, (accepted, proposed) by the probe and by the runtime, and its output preservation."""
    return {
        "drafter": drafter,
        "verifier": verifier,
        "self": is_self,
        "k": k,
        "probe": {"accepted": probe[0], "proposed": probe[1]},
        "runtime": {"accepted": runtime[0], "proposed": runtime[1]},
        "rows": rows,
        "preserved": rows - len(differs),
        "differing": differs,
    }
