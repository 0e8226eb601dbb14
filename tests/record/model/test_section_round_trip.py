"""Every section of every golden record read into its class and written back is the section it was, key for key.

So the class holds every key a run writes (none read past, none dropped) and writes it as the run did. No golden
record has an onnxruntime-genai leg; ``tests/suites/test_genai_leg.py`` reads and writes back a real run's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from measure.record.io import load_record
from measure.record.model.fidelity import Fidelity
from measure.record.model.framing import Framing
from measure.record.model.instructions import Instructions
from measure.record.model.plan import RunPlan

DATA = Path(__file__).resolve().parents[2] / "data"
RECORDS = sorted(p for p in DATA.glob("*.json") if p.name != "instructions-section.json")

Section = Callable[[dict[str, Any]], Any]
SECTIONS: dict[str, Section] = {
    "instructions": Instructions.from_dict,
    "plan": RunPlan.from_dict,
    "fidelity": Fidelity.from_dict,
    "framing": Framing.from_dict,
}
"""Each top-level section and the class method that reads it."""


def _sections() -> list[tuple[str, str, dict[str, Any]]]:
    alone = json.loads((DATA / "instructions-section.json").read_text())
    found = [("instructions-section.json", "instructions", alone)]
    for path in RECORDS:
        doc = load_record(path)
        found += [(path.name, key, doc[key]) for key in SECTIONS if doc.get(key)]
    return found


CASES = _sections()


def test_every_section_has_a_golden_record() -> None:
    """A section no golden record carries would be tested by nothing below."""
    assert {key for _, key, _ in CASES} == set(SECTIONS)


@pytest.mark.parametrize(("name", "key", "part"), CASES, ids=[f"{n}:{k}" for n, k, _ in CASES])
def test_section_reads_and_writes_back(name: str, key: str, part: dict[str, Any]) -> None:
    written = SECTIONS[key](part).to_dict()
    assert json.dumps(written, sort_keys=True) == json.dumps(part, sort_keys=True)
