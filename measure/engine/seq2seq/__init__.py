"""Encoder-decoder (seq2seq) tiers: their graph layouts, the encoder and decoder calls, and a decode's lane."""
