"""The Wall-clock page at real-size magnitudes: the int4 settings beside the speed, a budgeted run's plan stated."""

from __future__ import annotations

import html
import re

from tests_support import real_size_record

from measure.cli import main
from measure.record.io import write_atomic


def _wallclock(tmp_path) -> str:
    doc = real_size_record()
    write_atomic(tmp_path / "results" / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    assert main(["render", "--results", str(tmp_path / "results"), "--out", str(tmp_path / "md")]) == 0
    return html.unescape((tmp_path / "md" / "wallclock.md").read_text(encoding="utf-8"))  # as a reader sees it


def _row(page: str, tier: str) -> list[str]:
    line = next(line for line in page.splitlines() if line.startswith("| ") and f'id="tier-{tier}"' in line)
    return [c.strip() for c in line.strip("|").split(" | ")]


def test_each_int4_tier_states_its_block_size_and_accuracy_level_beside_its_speed(tmp_path):
    page = _wallclock(tmp_path)
    header = next(line for line in page.splitlines() if line.startswith("| tier | ms/token"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    assert columns[:4] == ["tier", "ms/token", "× plain time", "precision"]
    lite, plain = _row(page, "lm-small-int4"), _row(page, "lm-base-int8")
    assert len(lite) == len(columns) == len(plain)
    assert lite[3] == "int4<br>block 32, accuracy 0 (fp32, unset)" and plain[3] == "int8-dynamic"
    assert re.match(r"\d{3,}\.\d{3}", re.sub(r"<[^>]+>", " ", lite[1]).split()[0])  # hundreds of ms per token


def test_a_budgeted_run_says_its_budget_what_it_cut_and_how_it_ended(tmp_path):
    page = _wallclock(tmp_path)
    assert "A budgeted run (15.0 min; planned to end at 14.7)" in page
    assert "stopped when the budget was spent" in page
    assert "Cut by the budget: profile workers 3 -> 1" in page
