"""Every leg after Python onnxruntime's, in one tuple: the framing suite, the planner and the budget iterate over
it and never name a leg."""

from __future__ import annotations

from measure.suites.config import FramingConfig
from measure.suites.legs.contract import Leg, LegSetup
from measure.suites.legs.cost import LegCost
from measure.suites.legs.genai import GenaiLeg
from measure.suites.legs.node import NodeLeg
from measure.suites.legs.web import WebLeg
from measure.suites.legs.webgpu import WebGpuLeg

LEGS: tuple[type[Leg], ...] = (NodeLeg, WebLeg, WebGpuLeg, GenaiLeg)
"""Every leg after Python onnxruntime's, in the order they run on a tier and appear in the record."""


def enabled(leg: type[Leg], config: FramingConfig) -> bool:
    """The config's ``<key>_leg`` switch."""
    return bool(getattr(config, f"{leg.key}_leg"))


def open_legs(setup: LegSetup, style: str | None = None) -> list[Leg]:
    """The legs this run asks for that can take one of its tiers' kinds, opened (a leg that cannot run on this
    machine opens as skipped, with the reason); ``style``: only those of that :class:`LegCost` style."""
    return [
        leg(setup)  # type: ignore[call-arg]  # a Protocol has no __init__; every registered leg takes a setup
        for leg in LEGS
        if enabled(leg, setup.config) and leg.cost.kinds & setup.kinds and style in (None, leg.cost.style)
    ]


def planned(config: FramingConfig, kinds: frozenset[str]) -> tuple[LegCost, ...]:
    """What the planner counts: the legs that will run, as far as can be told without starting them."""
    return tuple(
        leg.cost for leg in LEGS if enabled(leg, config) and leg.cost.kinds & kinds and leg.ready(config) is None
    )
