"""Parity across runtimes, on a record built to mean one thing: never on what this machine's kernels decode.

The v3 record with both kinds (record-v3-lm: two encoder-decoder tiers, three decoder-only ones; Python,
onnxruntime-node and onnxruntime-web/wasm legs, the JavaScript legs skipping decoder-only tiers as they did
then) is given what issue 44 adds: the Node leg decodes the decoder-only tiers too, and a WebGPU leg on a
software adapter decodes every tier but one (failed), one row of lm-small-int4 to another token.
"""

from __future__ import annotations

import copy
import html
import re

import pytest
from tests_support import DATA_DIR

from measure.analysis.parity import Cell, runtime_agreement, runtime_matrix
from measure.record.io import load_record, validate
from measure.record.model import Record, from_document
from measure.site.pages.decision import _runtimes
from measure.site.pages.framing import runtimes_section

ADAPTER = {
    "vendor": "google",
    "architecture": "swiftshader",
    "device": "",
    "description": "",
    "fallback": True,
    "software": True,
}


def _as_python(entry: dict) -> dict:
    """Another leg's entry with the Python leg's facts for the same tier (as a runtime decoding identically has)."""
    out = {k: copy.deepcopy(v) for k, v in entry.items() if k not in ("quality", "prefill")}
    return out | {"divergence": []}


def _doc() -> dict:
    doc = load_record(DATA_DIR / "record-v3-lm.json")
    python, node, web = doc["framing"]["legs"]
    by_name = {t["tier"]: t for t in python["tiers"]}
    node["tiers"] = [_as_python(by_name[t["tier"]]) for t in node["tiers"]]
    webgpu = copy.deepcopy(web) | {"provider": "webgpu"}
    webgpu["execution"] = webgpu["execution"] | {"provider": "webgpu", "adapter": ADAPTER}
    tiers = []
    for t in python["tiers"]:
        entry = _as_python(t)
        if t["tier"] == "lm-small-int4":
            ids = entry["output_ids"][1]
            entry["output_ids"][1] = [*ids[:-1], ids[-1] + 1]
        if t["tier"] == "lm-base-fp32":
            entry = {"tier": t["tier"], "precision": t["precision"], "status": "failed", "reason": "the page crashed"}
        tiers.append(entry)
    webgpu["tiers"] = tiers
    doc["framing"]["legs"].append(webgpu)
    return doc


def _record(doc: dict) -> Record:
    validate(doc, "constructed", [])
    return from_document(doc, "constructed")


@pytest.fixture(scope="module")
def record() -> Record:
    return _record(_doc())


def test_the_matrix_has_a_column_per_runtime_and_a_row_per_kind_and_precision(record):
    m = runtime_matrix(record)
    assert m is not None
    assert [leg.name for leg in m.legs][-1] == "onnxruntime-web 1.30.0 (browser, webgpu)"
    assert [(r.kind, r.precision) for r in m.rows] == [
        ("seq2seq", "fp32"),
        ("seq2seq", "int8-dynamic"),
        ("causal", "fp32"),
        ("causal", "int8-dynamic"),
        ("causal", "int4"),
    ]
    rows = {(r.kind, r.precision): r.cells for r in m.rows}
    python, node, web, webgpu = rows[("causal", "int4")]
    assert isinstance(node, Cell) and (node.rows_same, node.rows) == (python.rows_same, python.rows)
    assert web == "skipped"  # the wasm leg of this record still skipped decoder-only tiers
    assert isinstance(webgpu, Cell) and webgpu.rows == python.rows
    assert rows[("causal", "fp32")][3] == "failed"


def test_agreement_names_each_runtime_s_tiers_that_decode_otherwise(record):
    node, web, webgpu = runtime_agreement(record)
    assert (len(node.same), node.differ, node.unmeasured, node.kinds_not_run) == (5, (), (), ())
    assert web.kinds_run == ("seq2seq",) and web.kinds_not_run == (("causal", "skipped"),)
    n = len(record.python_tiers[0].output_ids or ())
    assert webgpu.differ == (("lm-small-int4", n - 1, n),)
    assert webgpu.unmeasured == (("lm-base-fp32", "failed"),) and len(webgpu.same) == 3


def _text(md: str) -> str:
    return html.unescape(re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", re.sub(r"<[^>]+>", "", md)).replace("**", ""))


def test_the_overview_runtime_line_names_who_decodes_alike_and_who_does_not(record):
    line = _text(str(_runtimes(runtime_agreement(record))))
    assert line.startswith("Runtimes: onnxruntime-node 1.30.0 (node) on 5 tiers and onnxruntime-web 1.30.0 (browser) ")
    assert "on 2 encoder-decoder tiers (decoder-only: skipped) decode every golden row token for token" in line
    n = len(record.python_tiers[0].output_ids or ())
    webgpu = "onnxruntime-web 1.30.0 (browser, webgpu) on 4 of 5 tiers (lm-base-fp32 failed)"
    assert f"{webgpu} does not: lm-small-int4 ({n - 1}/{n} rows)" in line


def test_a_runtime_that_did_not_run_is_said_with_its_status():
    doc = _doc()
    web = doc["framing"]["legs"][2]
    web.update(status="skipped", reason="the browser ('chromium') was not found", tiers=[])
    web.pop("execution", None)
    line = _text(str(_runtimes(runtime_agreement(_record(doc)))))
    assert "; onnxruntime-web 1.30.0 (browser) was skipped here (evidence)." in line


def test_the_framing_page_heads_a_software_adapter_s_column_with_what_it_is_worth(record):
    from measure.analysis.record_analysis import analyse

    section = runtimes_section(analyse(record))
    assert section is not None
    assert "software adapter: numerics only, no timing" in str(section.heads[-1])
    assert "software adapter" not in str(section.heads[2])
    assert [str(r.kind) for r in section.matrix].count("decoder-only") == 3
