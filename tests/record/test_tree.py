"""Results-tree queries: one definition of "the newest complete record" for every command and page."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from measure.errors import SettingError
from measure.record.tree import by_machine, current_parts, newest, newest_parts, newest_per_machine, reference_machine


@dataclass(frozen=True)
class R:
    run_id: str
    machine_id: str
    started_at: str
    complete: bool = True
    commit: str | None = None
    parts: tuple[str, ...] = ("wallclock", "profile", "framing")


RUNS = [
    R("20261201T000000Z-000001", "m1", "2026-12-01T00:00:00Z", commit="aaa1"),
    R("20261203T000000Z-000003", "m1", "2026-12-03T00:00:00Z", complete=False, commit="bbb2"),
    R("20261202T000000Z-000002", "m1", "2026-12-02T00:00:00Z", commit="bbb1"),
    R("20261201T120000Z-000004", "m2", "2026-12-01T12:00:00Z", commit="aaa1"),
]


def test_newest_is_the_latest_complete_record_optionally_of_one_machine_and_commit():
    assert newest(RUNS).run_id == "20261202T000000Z-000002"  # the later one is incomplete
    assert newest(RUNS, machine="m2").run_id == "20261201T120000Z-000004"
    assert newest(RUNS, machine="m1", commit="aaa").run_id == "20261201T000000Z-000001"
    assert newest(RUNS, machine="m1", commit="bbb2") is None  # only an incomplete record there
    assert newest([]) is None


def test_per_machine_queries_keep_complete_records_in_time_order():
    assert {m: r.run_id for m, r in newest_per_machine(RUNS).items()} == {
        "m1": "20261202T000000Z-000002",
        "m2": "20261201T120000Z-000004",
    }
    assert [r.run_id for r in by_machine(RUNS)["m1"]] == ["20261201T000000Z-000001", "20261202T000000Z-000002"]


def test_each_part_comes_from_the_newest_complete_record_that_carries_it():
    runs = [
        *RUNS,
        R("20261204T000000Z-000005", "m1", "2026-12-04T00:00:00Z", parts=("wallclock",)),  # --suite wallclock
        R("20261205T000000Z-000006", "m1", "2026-12-05T00:00:00Z", complete=False, parts=("framing",)),
    ]
    found = {p: r.run_id for p, r in newest_parts(runs, "m1").items()}
    assert found == {
        "wallclock": "20261204T000000Z-000005",
        "profile": "20261202T000000Z-000002",  # the wall-clock-only run had no profile
        "framing": "20261202T000000Z-000002",  # nor framing; the newer framing run never finished
    }
    assert list(found) == ["wallclock", "profile", "framing"]
    assert newest_parts(runs, "m3") == {}
    assert list(current_parts(runs)) == ["m1", "m2"]


def test_the_reference_machine_has_the_most_complete_records_and_a_tie_goes_to_the_first_id():
    ref = reference_machine(RUNS)
    assert (ref.machine, ref.records, ref.chosen, ref.tied) == ("m1", 2, False, ())
    tie = [*RUNS, R("20261204T000000Z-000007", "m0", "2026-12-04T00:00:00Z"), R("20261205T0Z", "m0", "2026-12-05")]
    ref = reference_machine(tie)
    assert (ref.machine, ref.tied) == ("m0", ("m1",))  # m0 and m1 have two each; m0 sorts first
    assert reference_machine(tie, "m2").machine == "m2" and reference_machine(tie, "m2").chosen
    assert reference_machine([]) is None and reference_machine([], "m9") is None  # a fresh tree: no run yet
    with pytest.raises(SettingError, match=r"reference_machine: no complete record of machine 'm9' \(machines: m0, m1"):
        reference_machine(tie, "m9")
