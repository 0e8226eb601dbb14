"""One runtime leg of the framing section: which runtime decoded the tiers, how it ran (the browser's execution
and WebGPU adapter), its tiers and, for onnxruntime-genai, its speculative pairs.

Each class reads (``from_dict``) and writes (``to_dict``) its part; the suites start a leg with the builders below.
What another runtime answers (its execution, blocks, timing) arrives from its script already in the record's shape.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from measure.record.model.framing_tier import FramingTier
from measure.record.model.genai import GenaiPair
from measure.record.model.status import MEASURED, written_reason

Part = dict[str, Any]

PYTHON = "python"
"""The Python onnxruntime leg's language: the one leg that names no host (Python is the host of the run)."""


@dataclass(frozen=True)
class Adapter:
    """The WebGPU adapter a page ran on, as ``navigator.gpu.requestAdapter()`` described it."""

    vendor: str
    architecture: str
    fallback: bool
    software: bool
    """It renders on the CPU (SwiftShader and the like): its numerics are WebGPU's kernels, its timings mean nothing."""
    device: str = ""
    description: str = ""

    @property
    def name(self) -> str:
        said = " ".join(w for w in (self.vendor, self.architecture, self.device or self.description) if w)
        return said or "an unnamed adapter"

    @property
    def note(self) -> str:
        """What the pages and ``show`` say of it."""
        kind = SOFTWARE_ADAPTER if self.software else "hardware adapter"
        return f"{self.name} ({kind})"

    @classmethod
    def from_dict(cls, a: Part | None) -> Adapter | None:
        if not a:
            return None
        return cls(
            vendor=a["vendor"],
            architecture=a["architecture"],
            fallback=bool(a["fallback"]),
            software=bool(a["software"]),
            device=a.get("device", ""),
            description=a.get("description", ""),
        )

    def to_dict(self) -> Part:
        return {
            "vendor": self.vendor,
            "architecture": self.architecture,
            "device": self.device,
            "description": self.description,
            "fallback": self.fallback,
            "software": self.software,
        }


SOFTWARE_ADAPTER = "software adapter: numerics only, no timing"
"""The words for a leg on a software WebGPU adapter, wherever its speed would be shown."""


@dataclass(frozen=True)
class Execution:
    """How a runtime ran, as the browser page found it: provider, threads, isolation, SIMD, the WebGPU adapter."""

    provider: str
    threads: int
    cross_origin_isolated: bool
    simd: bool
    threads_requested: int | None = None
    """None: the runtime's default."""
    hardware_concurrency: int | None = None
    adapter: Adapter | None = None

    @classmethod
    def from_dict(cls, e: Part | None) -> Execution | None:
        if not e:
            return None
        return cls(
            provider=e["provider"],
            threads=int(e["threads"]),
            cross_origin_isolated=bool(e["cross_origin_isolated"]),
            simd=bool(e["simd"]),
            threads_requested=e.get("threads_requested"),
            hardware_concurrency=e.get("hardware_concurrency"),
            adapter=Adapter.from_dict(e.get("adapter")),
        )

    def to_dict(self) -> Part:
        part: Part = {
            "provider": self.provider,
            "threads": self.threads,
            "threads_requested": self.threads_requested,
            "cross_origin_isolated": self.cross_origin_isolated,
            "simd": self.simd,
            "hardware_concurrency": self.hardware_concurrency,
        }
        return part | ({"adapter": self.adapter.to_dict()} if self.adapter else {})


@dataclass(frozen=True)
class Leg:
    """One runtime that decoded the tiers; the first leg is always Python onnxruntime."""

    runtime: str
    language: str
    version: str | None
    status: str
    tiers: tuple[FramingTier, ...]
    host: str | None = None
    """Every leg but Python's names it (None until the runtime answers)."""
    reason: str = ""
    execution: Execution | None = None
    """The browser leg: execution provider, threads, cross-origin isolation, SIMD."""
    speculative: tuple[GenaiPair, ...] | None = None
    """The onnxruntime-genai leg: its draft-model speculative decoding per decoder-only pair (None: other legs)."""
    provider: str | None = None
    """What sets this leg apart from another of its runtime (``webgpu``: onnxruntime-web's WebGPU leg)."""

    @property
    def browser(self) -> bool:
        """The leg ran in a browser page (onnxruntime-web)."""
        return self.language == "browser"

    @property
    def name(self) -> str:
        version = f" {self.version}" if self.version else ""
        provider = f", {self.provider}" if self.provider else ""
        return f"{self.runtime}{version} ({self.language}{provider})"

    @property
    def software_adapter(self) -> bool:
        """It ran on a software WebGPU adapter: numerics only, no timing."""
        adapter = self.execution.adapter if self.execution else None
        return adapter is not None and adapter.software

    @property
    def measured(self) -> bool:
        return self.status == MEASURED

    @property
    def pairs(self) -> tuple[GenaiPair, ...]:
        """Its speculative pairs, none for a leg that runs no pairs."""
        return self.speculative or ()

    def tier(self, name: str) -> FramingTier | None:
        return next((t for t in self.tiers if t.tier == name), None)

    @classmethod
    def from_dict(cls, leg: Part) -> Leg:
        pairs = leg.get("speculative")
        return cls(
            runtime=leg["runtime"],
            language=leg["language"],
            version=leg.get("version"),
            status=leg["status"],
            tiers=tuple(FramingTier.from_dict(t) for t in leg.get("tiers", ())),
            host=leg.get("host"),
            reason=leg.get("reason", ""),
            execution=Execution.from_dict(leg.get("execution")),
            speculative=None if pairs is None else tuple(GenaiPair.from_dict(p) for p in pairs),
            provider=leg.get("provider"),
        )

    def to_dict(self) -> Part:
        part: Part = {"runtime": self.runtime, "language": self.language, "version": self.version}
        part |= {"host": self.host} if self.host is not None or self.language != PYTHON else {}
        part |= {"status": self.status} | written_reason(self.status, self.reason)
        part |= {"tiers": [t.to_dict() for t in self.tiers]}
        optional = {
            "execution": self.execution.to_dict() if self.execution else None,
            "speculative": None if self.speculative is None else [p.to_dict() for p in self.speculative],
            "provider": self.provider,
        }
        return part | {k: v for k, v in optional.items() if v is not None}


# ------------------------------------------------------------------ the legs as the suites start them


def python_leg(version: str | None) -> Part:
    """The Python onnxruntime leg: always there, at the environment's onnxruntime version."""
    return {"runtime": "onnxruntime", "language": PYTHON, "version": version, "status": MEASURED, "tiers": []}


def runtime_leg(runtime: str, language: str, provider: str | None = None) -> Part:
    """A later leg (onnxruntime-node, -web) as it starts: version and host are filled once it answers.
    ``provider`` names a leg that differs from another of the same runtime only by it (onnxruntime-web's webgpu)."""
    leg: Part = {
        "runtime": runtime,
        "language": language,
        "version": None,
        "host": None,
        "status": MEASURED,
        "tiers": [],
    }
    return leg | ({"provider": provider} if provider else {})
