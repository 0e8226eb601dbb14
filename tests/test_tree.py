"""Results-tree queries: one definition of "the newest complete record" for every command and page."""

from __future__ import annotations

from dataclasses import dataclass

from measure.tree import by_machine, newest, newest_per_machine


@dataclass(frozen=True)
class R:
    run_id: str
    machine_id: str
    started_at: str
    complete: bool = True
    commit: str | None = None


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
