"""The decode engine: tiers on disk, onnxruntime sessions, graph layouts, greedy and speculative decoding.

The only package that imports onnxruntime; it never imports the record, the analysis or the site."""
