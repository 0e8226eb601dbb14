"""``measure run --budget``: a duration it cannot read is one line and exit 2, before anything is loaded."""

from __future__ import annotations

import pytest

from measure.cli import main


@pytest.mark.parametrize("budget", ["soon", "0m", "-3"])
def test_a_budget_it_cannot_read_is_one_line_and_exit_2(tmp_path, capsys, budget):
    assert main(["run", "--results", str(tmp_path / "r"), "--budget", budget]) == 2
    err = capsys.readouterr().err
    assert err.startswith("measure run: error: --budget: expected a duration") and err.count("\n") == 1
    assert not (tmp_path / "r").exists()
