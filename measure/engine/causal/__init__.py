"""Decoder-only (causal LM) tiers: optimum and onnxruntime-genai layouts, and a decode's lane in its three forms
(grown from length 0, two bound buffers taking turns, one shared buffer)."""
