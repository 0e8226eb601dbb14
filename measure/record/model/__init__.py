"""The typed, read-only view of a run record: the one package that knows the record's field names.

A record is read once (:func:`measure.record.io.load`: migrate, validate), then
turned into these frozen dataclasses; analysis, verdicts, calibration,
comparison, ``show`` and the site read attributes, never raw dict keys.
Each section is one module (:mod:`~measure.record.model.wallclock` with its cost profile and call costs,
:mod:`~measure.record.model.fidelity`, :mod:`~measure.record.model.plan`, :mod:`~measure.record.model.instructions`,
:mod:`~measure.record.model.framing` with its legs, tiers, blocks, acceptance and the genai leg's figures):
its classes, how they are read (``from_dict``) and the builders a run fills, saved as plain dicts at the storage
edge (:mod:`measure.record.io`); :mod:`~measure.record.model.section` says how a class's fields are its keys.

Per-row samples become read-only numpy arrays (repeats x rows) here, so every
consumer gets the same shapes and none can change a record it was handed.
Simple sums that several pages print (argmax agreement, rows whose decode
framing leaves unchanged) are properties of the part they sum, written once.
"""

from measure.record.model.acceptance import Acceptance, Counts, Differing
from measure.record.model.bandwidth import BandwidthProbe, CacheLevel, Caches, KernelTiming, Traffic
from measure.record.model.call_costs import CallTimings, LayoutPair, LayoutVariant, TierCalls
from measure.record.model.cost_profile import Profile, ThreadSweep, WorkerSamples
from measure.record.model.fidelity import Fidelity, FidelityReference, PairFidelity, PathFidelity, TierFidelity
from measure.record.model.framing import Framing, FramingSample
from measure.record.model.framing_blocks import Block, LayerDiff
from measure.record.model.framing_leg import SOFTWARE_ADAPTER, Adapter, Execution, Leg
from measure.record.model.framing_tier import FP32, Divergence, FramingTier, LegTiming, Miss, Quality
from measure.record.model.genai import GenaiMeasure, GenaiPair, GenaiTier, PairedSpread, Spread
from measure.record.model.instructions import Instructions, InstructionTier
from measure.record.model.plan import Nbits, PlanOutcome, RunPlan
from measure.record.model.read import from_document
from measure.record.model.run import PARTS, Config, Environment, Git, Golden, Machine, Pairing, Record, TierEntry
from measure.record.model.wallclock import Case, Wallclock

__all__ = [
    "FP32",
    "PARTS",
    "SOFTWARE_ADAPTER",
    "Acceptance",
    "Adapter",
    "BandwidthProbe",
    "Block",
    "CacheLevel",
    "Caches",
    "CallTimings",
    "Case",
    "Config",
    "Counts",
    "Differing",
    "Divergence",
    "Environment",
    "Execution",
    "Fidelity",
    "FidelityReference",
    "Framing",
    "FramingSample",
    "FramingTier",
    "GenaiMeasure",
    "GenaiPair",
    "GenaiTier",
    "Git",
    "Golden",
    "InstructionTier",
    "Instructions",
    "KernelTiming",
    "LayerDiff",
    "LayoutPair",
    "LayoutVariant",
    "Leg",
    "LegTiming",
    "Machine",
    "Miss",
    "Nbits",
    "PairFidelity",
    "PairedSpread",
    "Pairing",
    "PathFidelity",
    "PlanOutcome",
    "Profile",
    "Quality",
    "Record",
    "RunPlan",
    "Spread",
    "ThreadSweep",
    "TierCalls",
    "TierEntry",
    "TierFidelity",
    "Traffic",
    "Wallclock",
    "WorkerSamples",
    "from_document",
]
