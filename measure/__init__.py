"""measure: is a quantized ONNX model tier fast and faithful on CPU? Numbers you can defend."""

from __future__ import annotations

__version__ = "0.1.0"
