"""``measure show`` at the magnitudes a real-size model gives: seconds per row, hundreds of MB, short levels."""

from __future__ import annotations

import contextlib
import io
import re

import pytest
from tests_support import real_size_record, with_bandwidth

from measure.cli import main
from measure.record.io import write_atomic

TABLES = ("wall-clock (median", "decoder-only tiers", "cost profile", "speculative pairs", "memory-bandwidth bound")


@pytest.fixture(scope="module")
def shown(tmp_path_factory) -> str:
    doc = with_bandwidth(real_size_record(), {"lm-base-fp32": 540_000_000, "lm-base-int8": 220_000_000})
    path = tmp_path_factory.mktemp("big") / doc["machine_id"] / f"{doc['run_id']}.json"
    write_atomic(path, doc)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(path)]) == 0
    return out.getvalue()


def _table(text: str, title: str) -> list[list[str]]:
    """The table under ``title``: its header and rows, each split where two or more spaces part its cells."""
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(title)) + 1
    rows = []
    for line in lines[start:]:
        cells = re.split(r" {2,}", line.strip())
        if not line.startswith("  ") or len(cells) == 1:  # the table ends at a blank line or a sentence under it
            break
        rows.append(cells)
    return rows


@pytest.mark.parametrize("title", TABLES)
def test_every_row_has_as_many_cells_as_its_header(shown, title):
    """No column runs into the next: the header's cells and each row's, split on the two spaces between."""
    rows = _table(shown, title)
    assert len(rows) > 1, title
    widths = {len(r) for r in rows}
    assert widths == {len(rows[0])}, (title, rows)


def test_an_interval_with_its_level_stays_apart_from_the_next_column(shown):
    assert " at 75.0%  " in shown  # the "581.954 [567.299, 628.629] at 75.0%64.520"
    assert not re.search(r"%\d", shown)
    assert re.search(r"\d{3,}\.\d{3} \[\d+\.\d{3}, \d+\.\d{3}\] at 75\.0%", shown)  # hundreds of ms per token


def test_the_plan_and_the_quantization_settings_are_shown(shown):
    assert "plan: budget 15.0 min" in shown and "cut: profile workers 3 -> 1" in shown
    assert "stopped: the budget spent" in shown
    wallclock = _table(shown, "wall-clock (median")
    header = wallclock[0]
    lite = next(r for r in wallclock if r[0] == "lm-small-int4")
    assert lite[header.index("quantization")] == "block 32, accuracy 0 (fp32, unset)"
    assert next(r for r in wallclock if r[0] == "lm-base-int8")[header.index("quantization")] == "-"


def test_the_plan_line_names_only_the_steps_the_run_took(tmp_path):
    """A --suite wallclock run with its profile cut plans no framing and no profile workers: show says neither."""
    doc = real_size_record()
    plan = doc["plan"]
    plan["steps"] = {"wallclock": 120.0, "profile": 0.0, "framing": 0.0}
    path = tmp_path / doc["machine_id"] / f"{doc['run_id']}.json"
    write_atomic(path, doc)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["show", str(path)]) == 0
    (line,) = [x for x in out.getvalue().splitlines() if x.startswith("plan: ")]
    assert "wall-clock " in line and "framing" not in line and "profile worker" not in line


def test_the_bound_is_shown_with_the_machines_bandwidth_and_each_tiers_sentence(shown):
    """10 GB/s: 540 MB is a 54 ms bound; a tier whose bytes are not counted is not in the table."""
    assert "memory-bandwidth bound (read bandwidth 10.0 GB/s on 1 thread(s), the median of 5 passes" in shown
    assert "caches (sysfs): L3 32 MiB" in shown
    rows = _table(shown, "memory-bandwidth bound")
    header = rows[0]
    fp32 = next(r for r in rows if r[0] == "lm-base-fp32")
    assert fp32[header.index("MB/token")] == "540.00" and fp32[header.index("bound ms")] == "54.000"
    assert fp32[header.index("efficiency")].endswith("%")
    assert {r[0] for r in rows[1:]} == {"lm-base-fp32", "lm-base-int8"}
    assert "lm-base-int8 runs at" in shown and "of its memory-bandwidth bound" in shown


def test_an_explore_record_shows_every_recipe_and_why_one_was_dropped(tmp_path, capsys):
    """The explore section: each candidate measured or dropped with its stage and reason, the reason cleaned of
    control characters like every record string."""
    import copy

    from tests_support import DATA_DIR

    from measure.record.io import load_record

    doc = copy.deepcopy(load_record(DATA_DIR / "record-v5-explore.json"))
    last = copy.deepcopy(doc["explore"]["candidates"][-1])
    recipe = {"name": "int4-asym", "method": "matmul-nbits", "bits": 4}
    reason = "on the first 6 golden rows, mean KLD 0.4 > 0.01 \x1b[2J"
    last.update(tier="small-int4-asym", recipe=recipe, dropped="fidelity", reason=reason)
    doc["explore"]["candidates"].append(last)
    path = tmp_path / doc["machine_id"] / f"{doc['run_id']}.json"
    write_atomic(path, doc)
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    assert "explore: 5 recipe tiers from ../grid.toml, screened on 6 rows (role plain)" in out
    assert "lm-small-int8 (int8 of lm-small-fp32): measured (screen: mean KLD" in out
    assert "small-int4-asym (int4-asym of small-fp32): dropped at fidelity: on the first 6 golden rows" in out
    assert "\x1b" not in out
