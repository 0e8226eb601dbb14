"""Rendering: run records -> typed page contexts -> Jinja templates -> a site source any Markdown site generator builds.

Downstream of measurement: imports records, analysis and verdicts, never onnxruntime.
"""
