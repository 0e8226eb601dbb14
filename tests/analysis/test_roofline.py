"""The memory-bandwidth bound and efficiency, from records built with the condition in them (never this machine's)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure.analysis.roofline import NEAR_BOUND, decode_ms_per_token, mean_positions, roofline
from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.record.model.bandwidth import CacheLevel, Caches, bandwidth_part

GB = 1e9
BANDWIDTH = 10 * GB
"""The probe's bandwidth these records state: 1 GB read in 0.1 s at every pass."""
LLC = 32 * 2**20


def _record(weights: dict[str, int], step_ms: dict[str, float], llc: int | None = LLC) -> dict[str, Any]:
    """record-v4 with each tier's step reading ``weights`` bytes (no cache), decoding at ``step_ms`` per step
    after its first token, and a probe of :data:`BANDWIDTH` beside caches of ``llc`` bytes."""
    doc = copy.deepcopy(load_record(DATA_DIR / "record-v4.json"))
    for name, size in weights.items():
        doc["tiers"][name]["traffic"] = {
            "graph": "decoder-kv.onnx",
            "weights_bytes": size,
            "embedding_bytes": 0,
            "kv_bytes_per_position": 0,
            "cross_bytes_per_source_token": 0,
            "weights": 1,
        }
    for name, ms in step_ms.items():
        c = doc["wallclock"]["cases"][name]
        steps = np.array([max(0, k - 1) for k in c["calls"]], dtype=float)
        first = np.asarray(c["first_token_s"], dtype=float)
        c["wall_s"] = (first + ms / 1000 * steps).tolist()
        c["run_s"] = (np.asarray(c["wall_s"]) * 0.99).tolist()
    levels = (CacheLevel(3, "Unified", llc, 1),) if llc else ()
    caches = Caches("sysfs" if llc else "unknown", levels)
    doc["wallclock"]["profile"]["bandwidth"] = bandwidth_part("test", int(GB), {1: [0.1] * 5}, caches, "linux x86_64")
    validate(doc, "roofline.json")
    return doc


def _bounds(doc: dict[str, Any]):
    found = roofline(from_document(doc, "roofline.json"))
    assert found is not None
    return found


def test_near_and_far_from_the_bound_get_the_two_sentences():
    """200 MB at 10 GB/s is a 20 ms bound: at 22.2 ms a step runs at 90% of it, at 100 ms at 20%."""
    doc = _record({"base-int8": 200_000_000, "small-int4": 200_000_000}, {"base-int8": 20 / 0.9, "small-int4": 100})
    r = _bounds(doc)
    assert r.bandwidth is not None and r.bandwidth.bytes_per_s == pytest.approx(BANDWIDTH)
    near, far = r.of("base-int8"), r.of("small-int4")
    assert near.bound_ms_per_token == pytest.approx(20.0)
    assert near.efficiency == pytest.approx(0.9, rel=1e-6) and near.limit == "memory"
    assert far.efficiency == pytest.approx(0.2, rel=1e-6) and far.limit == "kernels"
    assert "90% of its memory-bandwidth bound" in near.finding and "only fewer bytes" in near.finding
    assert "20% of its memory-bandwidth bound" in far.finding and "memory is not its limit" in far.finding
    # the int4 tier's graph says accuracy level 0: the sentence names what its kernel does
    assert "accuracy level 0 dequantizes the int4 weights to fp32" in far.finding
    assert near.finding != far.finding
    assert far.efficiency < NEAR_BOUND <= near.efficiency


def test_a_tier_that_fits_in_the_last_level_cache_gets_no_ratio():
    doc = _record({"base-fp32": 3_000_000, "base-int8": 200_000_000}, {"base-fp32": 1.0, "base-int8": 25.0})
    small = _bounds(doc).of("base-fp32")
    assert small.limit == "cache" and small.efficiency is None and not small.applies
    assert "does not apply" in small.finding and "%" not in small.finding
    assert _bounds(doc).of("base-int8").applies


def test_a_tier_faster_than_its_bound_is_said_so_with_the_reasons():
    doc = _record({"base-int8": 200_000_000}, {"base-int8": 10.0})
    beyond = _bounds(doc).of("base-int8")
    assert beyond.efficiency == pytest.approx(2.0) and beyond.limit == "beyond"
    assert "faster than its bound" in beyond.finding and "cache" in beyond.finding


def test_unknown_caches_still_bound_and_no_probe_gives_bytes_only():
    doc = _record({"base-int8": 3_000_000}, {"base-int8": 1.0}, llc=None)
    assert _bounds(doc).of("base-int8").limit in ("memory", "kernels", "beyond")
    del doc["wallclock"]["profile"]["bandwidth"]
    bare = _bounds(doc)
    assert bare.bandwidth is None
    t = bare.of("base-int8")
    assert t.limit == "unprobed" and t.bound_ms_per_token is None and t.bytes_per_token == 3_000_000


def test_a_record_without_counts_has_no_roofline():
    assert roofline(from_document(load_record(DATA_DIR / "record-v4.json"), "r.json")) is None


def test_the_cache_is_read_at_the_mean_position_of_the_decode_steps():
    """Decoder-only: a row with prompt 10 and 4 calls has steps reading 11, 12, 13 positions; with prompt 2
    and 2 calls, 3: the mean of 11, 12, 13, 3 is 9.75. Encoder-decoder: start token + outputs, the source aside."""
    assert mean_positions("causal", (4, 2), (10, 2)) == (pytest.approx(9.75), 0.0)
    positions, source = mean_positions("seq2seq", (4, 2), (10, 2))
    assert positions == pytest.approx((2 + 3 + 4 + 2) / 4) and source == pytest.approx((3 * 10 + 2) / 4)
    assert mean_positions("causal", (1, 1), (5, 5)) == (0.0, 0.0)


def test_bytes_per_token_add_the_cache_at_its_mean_position():
    doc = _record({"base-int8": 200_000_000}, {"base-int8": 25.0})
    doc["tiers"]["base-int8"]["traffic"] |= {"kv_bytes_per_position": 1000, "cross_bytes_per_source_token": 100}
    t = _bounds(doc).of("base-int8")
    case = doc["wallclock"]["cases"]["base-int8"]
    positions, source = mean_positions("seq2seq", tuple(case["calls"]), tuple(case["source_tokens"]))
    assert t.kv_bytes == pytest.approx(1000 * positions + 100 * source)
    assert t.bytes_per_token == pytest.approx(200_000_000 + t.kv_bytes)


def test_a_step_is_timed_after_the_first_token():
    doc = _record({"base-int8": 200_000_000}, {"base-int8": 7.5})
    case = from_document(doc, "r.json").wallclock.cases["base-int8"]
    assert decode_ms_per_token(case).value == pytest.approx(7.5)


def _kernel(op: str, weights: int, op_bytes: int, call_s: float, **attributes: int) -> dict[str, Any]:
    return {
        "op": op,
        "domain": "com.microsoft" if op == "MatMulNBits" else "",
        "inputs": [None, [[1], 1]],
        "attributes": attributes,
        "nodes": 10,
        "weights_bytes": weights,
        "op_bytes": op_bytes,
        "copies": 100,
        "call_s": [call_s] * 5,
    }


def test_a_kernel_far_below_the_bandwidth_is_named_as_the_limit():
    """At 10 GB/s: int4's MatMulNBits alone reads 1 MB in 0.5 ms (2 GB/s, 20%); 100 MB of its 200 at that rate and
    the other 100 at the bandwidth make a 60 ms step at its kernels' own rates."""
    doc = _record({"small-int4": 200_000_000}, {"small-int4": 100})
    kernel = _kernel("MatMulNBits", 1_000_000, 100_000_000, 0.0005, bits=4, block_size=32, accuracy_level=0)
    doc["wallclock"]["profile"]["kernels"] = {"threads": 1, "tiers": {"small-int4": [kernel]}}
    validate(doc, "roofline.json")
    t = _bounds(doc).of("small-int4")
    (rate,) = t.kernels
    assert rate.bytes_per_s == pytest.approx(2 * GB) and rate.share == pytest.approx(0.2)
    assert t.kernel_ms_per_token == pytest.approx(100e6 / (2 * GB) * 1000 + 100e6 / BANDWIDTH * 1000)
    assert "MatMulNBits (int4, block 32, accuracy level 0) alone reads its weights at 2.0 GB/s, 20%" in t.finding
    assert "dequantizes to fp32" in t.finding and "that kernel is the limit" in t.finding


def test_kernels_near_the_bandwidth_put_the_time_between_them():
    doc = _record({"base-int8": 200_000_000}, {"base-int8": 100})
    kernel = _kernel("MatMulInteger", 1_000_000, 150_000_000, 0.000105)
    doc["wallclock"]["profile"]["kernels"] = {"threads": 1, "tiers": {"base-int8": [kernel]}}
    t = _bounds(doc).of("base-int8")
    assert t.limit == "kernels" and t.kernels[0].share == pytest.approx(1 / 1.05)
    assert "matrix kernels alone read at 9.5 GB/s, near the machine's bandwidth" in t.finding
    assert "the time goes between them" in t.finding


def test_the_overview_precision_line_says_which_effect_decides():
    """The analysis hands the decision the roofline's sentence; the Overview's Precision block says it under "Why"."""
    from measure.analysis.decision import decide
    from measure.analysis.headline import headline
    from measure.analysis.record_analysis import analyse
    from measure.site.pages.decision import decision_block

    doc = _record({"base-int8": 200_000_000, "small-int4": 200_000_000}, {"base-int8": 20 / 0.9, "small-int4": 100})
    for t in doc["fidelity"]["tiers"]:
        t["reference"] = "base-fp32"  # one model: precision lines compare its tiers
    validate(doc, "roofline.json")
    a = analyse(from_document(doc, "roofline.json"))
    d = decide(a)
    limits = {p.tier: p.limit for p in d.precision}
    assert "90% of its memory-bandwidth bound" in (limits["base-int8"] or "")
    assert "memory is not its limit" in (limits["small-int4"] or "")
    why = [str(x) for x in decision_block(d, headline(a)).precision if str(x).startswith("**Why**")]
    assert len(why) == 1 and "only fewer bytes" in why[0] and "a setting or a runtime change" in why[0]
