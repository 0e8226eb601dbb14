"""The profile's kernel step: which tiers it times (those beyond the cache), in a process of its own."""

from __future__ import annotations

from tests_support import DATA_DIR

from measure import bundled
from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.suites.kernels import LEAST_BYTES, kernel_bytes, kernels_part, run_kernels


def test_the_kernels_hold_four_times_the_cache_at_least_256_mib():
    assert kernel_bytes(96 * 2**20) == 384 * 2**20
    assert kernel_bytes(2**20) == LEAST_BYTES == kernel_bytes(None) == 256 * 2**20


def _tiers(weights: int) -> dict:
    folder = bundled.DEMO_DIR / "lm-base-int4"
    traffic = {"graph": "model.onnx", "weights_bytes": weights, "embedding_bytes": 0, "kv_bytes_per_position": 0}
    return {"lm-base-int4": {"path": str(folder), "traffic": traffic}}


def test_only_tiers_beyond_the_last_level_cache_are_timed(monkeypatch):
    asked = {}
    monkeypatch.setattr("measure.suites.kernels.run_kernels", lambda g, t, b: asked.update(g=g, t=t, b=b) or {})
    probe = {"caches": {"last_level_bytes": 32 * 2**20}}
    assert kernels_part(_tiers(353_280), probe, 2) is None  # the demo's int4 tier fits in cache
    assert kernels_part(_tiers(200_000_000), probe, 2) == {"threads": 2, "tiers": {}}
    assert asked == {
        "g": {"lm-base-int4": str(bundled.DEMO_DIR / "lm-base-int4" / "model.onnx")},
        "t": 2,
        "b": LEAST_BYTES,
    }


def test_a_tiers_kernels_are_timed_in_a_fresh_process_and_the_part_is_valid():
    graph = str(bundled.DEMO_DIR / "lm-base-int4" / "model.onnx")
    found = run_kernels({"lm-base-int4": graph}, 1, 2**20, passes=2)
    (nbits,) = [k for k in found["lm-base-int4"] if k["op"] == "MatMulNBits"]
    assert nbits["copies"] * nbits["weights_bytes"] >= 2**20 and len(nbits["call_s"]) == 2
    doc = load_record(DATA_DIR / "record-v4.json")
    doc["wallclock"]["profile"]["kernels"] = {"threads": 1, "tiers": {"small-int4": found["lm-base-int4"]}}
    validate(doc, "kernels.json")
    (view,) = [k for k in from_document(doc, "k.json").wallclock.profile.kernels["small-int4"] if k.op == "MatMulNBits"]
    assert view.bytes_per_s and view.bytes_per_s > 0 and view.op_bytes >= view.weights_bytes
