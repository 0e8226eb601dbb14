"""The decode engine: tiers on disk, onnxruntime sessions, graph layouts, greedy and speculative decoding.

The only package that imports onnxruntime; it never imports the record, the analysis or the site.

onnxruntime (1.2x and later, on Linux too) and onnxruntime-genai start a telemetry thread when imported that
wakes every few seconds to write a local event store and try an upload: work inside every timed region and
every instruction count that has nothing to do with the model (about a million instructions a wake-up under
callgrind). It is switched off here, before either is imported, unless the environment already says otherwise.
"""

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
