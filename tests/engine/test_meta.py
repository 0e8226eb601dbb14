"""A tier folder's ``model``: the demo's two exports of the base decoder-only model name one model."""

from __future__ import annotations

import json
import shutil

import pytest

from measure import bundled
from measure.engine.meta import model_name
from measure.errors import MeasureError


def test_the_optimum_and_genai_builder_exports_of_one_model_name_it_alike():
    demo = bundled.DEMO_DIR
    names = {t: model_name(demo / t) for t in ("lm-base-fp32", "lm-base-int8", "genai-base-fp32", "genai-base-int4")}
    assert set(names.values()) == {"lm-base"}, names
    assert model_name(demo / "lm-small-int4") == "lm-small" and model_name(demo / "base-fp32") is None


def test_a_model_that_is_not_a_name_is_one_line_naming_the_file(tmp_path):
    folder = tmp_path / "t"
    shutil.copytree(bundled.DEMO_DIR / "lm-small-int4", folder)
    meta = json.loads((folder / "tier.json").read_text(encoding="utf-8"))
    (folder / "tier.json").write_text(json.dumps(meta | {"model": 3}), encoding="utf-8")
    with pytest.raises(MeasureError, match=r"t/tier.json: model: expected the name of the model this tier exports"):
        model_name(folder)
