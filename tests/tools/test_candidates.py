"""The search's candidates: grids read strictly, every (reference, recipe) checked before anything is written."""

from __future__ import annotations

import pytest

from measure import bundled
from measure.errors import MeasureError
from measure.tools.candidates import DEFAULT_GRID, default_grid, load_grid, plan_candidates, tier_name
from measure.tools.recipes import NAMED, Keep

LM = bundled.CONFIG.parent / "lm-small-fp32"
SEQ = bundled.SMALL_FP32


def test_a_grid_names_recipes_or_states_them(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text(
        '[[recipes]]\nname = "int8"\n\n[[recipes]]\nname = "head-kept"\nbase = "int8-nbits"\n'
        '[recipes.keep]\ngroups = ["lm_head"]\n'
    )
    grid = load_grid(path)
    assert grid.path == path
    assert grid.recipes[0] is NAMED["int8"]
    assert grid.recipes[1].name == "head-kept" and grid.recipes[1].keep == Keep(groups=("lm_head",))
    assert [r.name for r in default_grid().recipes] == list(DEFAULT_GRID)
    assert default_grid(calibrated=True).recipes[-1].name == "int8-static"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("recipe = 1\n", ("key recipe", "unknown")),
        ("", ("key recipes", "one or more")),
        ('[[recipes]]\nname = "int9"\n', ("recipes[0]", "no recipe named 'int9'")),
        ('[[recipes]]\nmethod = "dynamic-int8"\n', ("recipes[0]", "key name", "missing")),
        (
            '[[recipes]]\nname = "a"\nmethod = "matmul-nbits"\nbits = 4\nblock_size = 8\n',
            ("recipes[0]", "key block_size"),
        ),
        ('[[recipes]]\nname = "int8"\n[[recipes]]\nname = "int8"\n', ("'int8' is named twice",)),
        ('[[recipes]]\nname = "a"\nmethod = "dynamic-int8"\nper_chanel = true\n', ("recipes[0]", "key per_chanel")),
    ],
)
def test_a_bad_grid_is_one_line_naming_the_file_and_entry(tmp_path, text, names):
    path = tmp_path / "grid.toml"
    path.write_text(text)
    with pytest.raises(MeasureError) as err:
        load_grid(path)
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)), message
    for name in names:
        assert name in message, message


def test_candidates_are_checked_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(MeasureError, match=r"small-int8/encoder\.onnx: is int8-dynamic, not full precision"):
        plan_candidates([bundled.DEMO_DIR / "small-int8"], default_grid(), out, None)
    with pytest.raises(MeasureError, match=r"recipe int8-static: static-int8 needs calibration rows"):
        plan_candidates([LM], default_grid(calibrated=True), out, None)
    (out / "lm-small-int8").mkdir(parents=True)
    (out / "lm-small-int8" / "mine.txt").write_text("x")
    with pytest.raises(MeasureError, match=r"lm-small-int8: exists and was not made by recipe int8"):
        plan_candidates([LM], default_grid(), out, None)
    assert [p.name for p in out.iterdir()] == ["lm-small-int8"]
    planned = plan_candidates([LM, SEQ], default_grid(), tmp_path / "fresh", None)
    assert [c.tier for c in planned][:2] == ["lm-small-int8", "lm-small-int8-per-channel"]
    assert len(planned) == 2 * len(DEFAULT_GRID) and not (tmp_path / "fresh").exists()
    assert tier_name("smollm2-fp32", NAMED["int8-nbits"]) == "smollm2-int8-nbits"
