"""Golden rows for a language model: plain prompts, and the reference tier's own greedy continuations of them.

A decoder-only model has no "expected output" a team wrote down; what a quantized tier must keep is what its
full-precision source says. ``measure init --prompts FILE`` reads prompts (one per line, or JSONL with ``input``
or ``prompt``), decodes each with the reference tier under measure's own loop (the tokens a run will compare) and
writes the rows. A chat template is applied only when asked (``--chat-template``): the tokenizer's own, from the
reference folder's ``tokenizer_config.json``, rendered once into a prompt template with ``{input}`` where the
user's text goes, so the run and the rows read each prompt alike.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from measure.engine.meta import read_json_object
from measure.engine.tier import Tier
from measure.errors import MeasureError

PROMPTS_MAX = 10_000
"""Prompts a file may hold: golden rows are a fixed, small set every run decodes."""


def read_prompts(path: Path) -> list[str]:
    """Prompts from ``path``: JSONL objects with ``input`` (or ``prompt``), else one prompt per non-empty line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise MeasureError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from exc
    except UnicodeDecodeError as exc:
        raise MeasureError(f"{path}: not UTF-8 text (byte {exc.start}); expected one prompt a line") from exc
    lines = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        raise MeasureError(f"{path}: no prompts; expected one prompt a line (or JSONL with an input field)")
    if len(lines) > PROMPTS_MAX:
        raise MeasureError(f"{path}: {len(lines)} prompts; expected at most {PROMPTS_MAX}")
    jsonl = lines[0][1].lstrip().startswith("{")
    prompts = []
    for i, line in lines:
        if not jsonl:
            prompts.append(line.strip())
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise MeasureError(f"{path}:{i}: not valid JSON ({exc.msg}); expected one object a line") from exc
        found = row.get("input", row.get("prompt")) if isinstance(row, dict) else None
        if not isinstance(found, str) or not found.strip():
            raise MeasureError(f"{path}:{i}: expected an object with a non-empty string input (or prompt)")
        prompts.append(found)
    return prompts


def _template(folder: Path) -> tuple[Path, str]:
    """The tokenizer's chat template: ``tokenizer_config.json``'s ``chat_template``, else ``chat_template.jinja``
    (where transformers 4.5x saves it)."""
    config = folder / "tokenizer_config.json"
    if config.is_file():
        found = read_json_object(config).get("chat_template")
        if isinstance(found, str) and found.strip():
            return config, found
    path = folder / "chat_template.jinja"
    if path.is_file():
        try:
            return path, path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise MeasureError(f"{path}: cannot read this chat template ({exc})") from exc
    raise MeasureError(
        f"{folder}: no chat template (tokenizer_config.json chat_template, or chat_template.jinja); leave out "
        "--chat-template"
    )


def chat_prompt(folder: Path) -> str:
    """The tokenizer's chat template rendered for one user turn, with ``{input}`` where the turn's text goes."""
    path, template = _template(folder)
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    marker = "\x00INPUT\x00"
    try:
        rendered = (
            ImmutableSandboxedEnvironment()
            .from_string(template)
            .render(messages=[{"role": "user", "content": marker}], add_generation_prompt=True, bos_token="")
        )
    except Exception as exc:  # a template is the model's code: any failure is one line naming the file
        raise MeasureError(f"{path}: the chat template cannot be rendered ({exc})") from exc
    if rendered.count(marker) != 1:
        raise MeasureError(f"{path}: the chat template does not place the user's text once in what it renders")
    return rendered.replace(marker, "{input}")


@dataclass(frozen=True)
class Continued:
    """Golden rows made from prompts, and what a reader needs to know of how."""

    text: str
    """The JSONL rows."""
    rows: int
    max_new_tokens: int


def continuations(reference: Tier, prompts: list[str], max_new_tokens: int) -> Continued:
    """Each prompt's greedy continuation under ``reference`` (its prompt template applied), as golden rows."""
    out = []
    for prompt in prompts:
        decoded = reference.greedy(prompt, max_new_tokens=max_new_tokens)
        if not decoded.tokens:
            raise MeasureError(
                f"{reference.path}: decoded no token for the prompt {prompt[:40]!r}: end-of-sequence first"
            )
        row: dict[str, object] = {"input": prompt, "output": decoded.text}
        if decoded.stopped != "eos":  # cut at the limit: no end-of-sequence is scored after it
            row["truncated"] = True
        out.append(json.dumps(row, ensure_ascii=False))
    return Continued("".join(f"{line}\n" for line in out), len(out), max_new_tokens)
