"""The framing suite's greedy decode is its single-step replay: the same tokens, logits and cache, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from measure import bundled
from measure.engine.load import load_tier
from measure.suites.single_step import decode_single_step

DEMO = bundled.CONFIG.parent


@pytest.mark.parametrize(
    "name", ["lm-base-fp32", "lm-base-int8", "lm-small-int4", "genai-base-int4", "lm-small-fp32-split"]
)
@pytest.mark.parametrize("limit", [None, 3])
def test_the_decode_equals_the_greedy_decode_and_the_teacher_forced_replay(golden, name, limit):
    """Stopped at eos or at the limit (the last token fed all the same), whatever the tier's layout or precision."""
    tier = load_tier(DEMO / name, max_new_tokens=limit)
    for row in golden.rows[:6]:
        ids = tier.source_ids(row.input)
        found = decode_single_step(tier, ids)
        assert found is not None
        tokens, (logits, cache) = found
        assert tuple(tokens) == tier.greedy_ids(ids).tokens
        want_logits, want_cache = tier.feed_framed(ids, tokens, 1)
        assert np.array_equal(logits, want_logits)
        assert len(cache) == len(want_cache) and all(
            np.array_equal(a, b) for a, b in zip(cache, want_cache, strict=True)
        )


def test_an_encoder_decoder_tier_keeps_its_own_replay(base_int8, golden):
    assert decode_single_step(base_int8, base_int8.source_ids(golden.rows[0].input)) is None
