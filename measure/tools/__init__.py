"""Artifact and repository writers: quantized tiers (``measure quantize``) and starter files (``measure init``)."""
