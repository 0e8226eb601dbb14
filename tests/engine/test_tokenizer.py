"""Tokenizers: the demo's tokenizer.json and the ByT5 byte scheme."""

from __future__ import annotations

from measure import bundled
from measure.engine.tokenizer import ByteTokenizer, load_tokenizer


def test_byte_scheme_round_trips_utf8():
    tok = ByteTokenizer()
    ids = tok.encode("ёж")
    assert ids[-1] == 1  # eos appended, as ByT5 does
    assert all(i >= 3 for i in ids[:-1])
    assert len(ids) == len("ёж".encode()) + 1
    assert tok.decode(ids) == "ёж"
    assert tok.special_ids() == {"pad_token_id": 0, "eos_token_id": 1, "unk_token_id": 2}
    assert tok.vocab_size() == 259


def test_json_tokenizer_is_character_level():
    tok = load_tokenizer(bundled.REFERENCE, "tokenizer.json")
    ids = tok.encode("съешь ещё")
    assert len(ids) == len("съешь ещё")
    assert tok.decode(ids) == "съешь ещё"
    assert tok.special_ids()["eos_token_id"] == tok.vocabulary()["</s>"]
