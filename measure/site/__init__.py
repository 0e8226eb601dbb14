"""Rendering: run records -> typed page contexts -> Jinja templates -> Markdown pages for mkdocs.

Downstream of measurement: imports records, analysis and verdicts, never onnxruntime.
"""
