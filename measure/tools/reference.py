"""The documentation's reference pages, generated from the code they describe so they cannot drift.

* **CLI**: every verb of ``measure`` from the argument parser itself: usage, what it does, each argument with its
  default and help.
* **Suite config**: every key of every table of the suite config from the dataclasses the loader builds (their
  types, defaults and field docstrings) and the ranges the record schema holds a stored config to.
* **Record schema**: every field of a run record from the shipped JSON Schema, to the depth a reader needs
  (:mod:`measure.tools.reference_schema`).

``python -m measure.tools.reference docs/reference`` writes the pages; ``--check`` lists the stale ones and exits
1, which the tests run, so a verb, key or field added without its page fails the suite.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import MISSING, fields
from pathlib import Path
from typing import Any

from measure.tools.reference_markdown import GENERATED, cell, code, field_docs
from measure.tools.reference_schema import schema_page

# --- the command line ---------------------------------------------------------------------------------------------


def _argument(action: argparse.Action) -> tuple[str, str, str]:
    """(how it is written, its default, what it does) for one argument of a verb."""
    if action.option_strings:
        written = ", ".join(f"`{o}`" for o in action.option_strings)
        if action.nargs != 0:
            meta = action.metavar or action.dest.upper()
            written += f" `{' '.join(meta) if isinstance(meta, tuple) else meta}`"
    else:
        meta = action.metavar or action.dest
        written = f"`{' '.join(meta) if isinstance(meta, tuple) else meta}`"
        if action.nargs in ("*", "+"):
            written += " …"
    default = "" if action.default in (None, argparse.SUPPRESS, False) or action.nargs == 0 else code(action.default)
    if isinstance(action.default, list | tuple) and not action.default:
        default = ""
    choices = f" One of {', '.join(f'`{c}`' for c in action.choices)}." if action.choices else ""
    return written, default, (action.help or "") % vars(action) + choices if action.help else choices.strip()


def _verb_parsers() -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    from measure.cli import VERBS, build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for verb, summary in VERBS.items():
        yield verb, summary, sub.choices[verb]


def cli_page() -> str:
    """Every verb: its usage line, what it does, and a table of its arguments."""
    lines = [
        "# Command line",
        "",
        GENERATED,
        "",
        "Every verb of `measure`, as `measure VERB --help` prints it. Bad input is one line on stderr and exit",
        "code 2; `measure check` exits 1 when a gate fails.",
        "",
        "| verb | what it does |",
        "|---|---|",
    ]
    lines += [f"| [`{v}`](#{v}) | {cell(summary)} |" for v, summary, _ in _verb_parsers()]
    for verb, summary, p in _verb_parsers():
        usage = " ".join(p.format_usage().removeprefix("usage: ").split())
        lines += [
            "",
            f"## {verb} {{: #{verb} }}",
            "",
            f"{cell(p.description or summary)}",
            "",
            "```text",
            usage,
            "```",
        ]
        actions = [a for a in p._actions if not isinstance(a, argparse._HelpAction)]
        if actions:
            lines += ["", "| argument | default | meaning |", "|---|---|---|"]
            lines += ["| " + " | ".join(cell(x) for x in _argument(a)) + " |" for a in actions]
    return "\n".join(lines) + "\n"


# --- the suite config ---------------------------------------------------------------------------------------------


def _range(spec: dict[str, Any]) -> str:
    """A schema property's range in words: ``1 to 64``, ``≥ 0``, ``> 0``, one of an enum; items for a list."""
    if "items" in spec:
        inner = _range(spec["items"])
        return f"each {inner}" if inner else ""
    if "enum" in spec:
        return "one of " + ", ".join(code(v) for v in spec["enum"])
    if "oneOf" in spec:
        return "; or ".join(r for r in (_range(s) for s in spec["oneOf"]) if r)
    if "additionalProperties" in spec and isinstance(spec["additionalProperties"], dict):
        inner = _range(spec["additionalProperties"])
        return f"per role: {inner}" if inner else ""
    lo = spec.get("minimum", spec.get("exclusiveMinimum"))
    strict = "exclusiveMinimum" in spec
    hi = spec.get("maximum")
    if lo is not None and hi is not None and not strict:
        return f"{lo} to {hi}"
    said = [f"{'>' if strict else '≥'} {lo}" if lo is not None else "", f"≤ {hi}" if hi is not None else ""]
    return ", ".join(s for s in said if s)


TYPES = {
    "str": "string",
    "int": "integer",
    "float": "number",
    "bool": "boolean",
    "Path": "path",
    "tuple[int, ...]": "list of integers",
    "tuple[str, ...]": "list of strings",
    "Bound": "number, or a table of one per role",
    "str | float": "duration (string), or seconds (number)",
}


def _type(annotation: Any) -> str:
    """A field's annotation in the words a TOML user reads: ``str | None`` is an optional string."""
    written = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    optional = written.endswith(" | None")
    written = written.removesuffix(" | None")
    return TYPES.get(written, written) + (", optional" if optional else "")


def _table(title: str, cls: type, schema: dict[str, Any], heading: str, note: str = "") -> list[str]:
    docs = field_docs(cls)
    props = schema.get("properties", {})
    lines = ["", f"## {title} {{: #{heading} }}", ""]
    if note:
        lines += [note, ""]
    lines += ["| key | type | default | range | meaning |", "|---|---|---|---|---|"]
    for f in fields(cls):
        if (f.name == "path" and cls.__name__ == "SuiteConfig") or f.metadata.get("derived"):
            continue  # not a key a config sets: where the config was read, or what its files say
        if f.default is not MISSING:
            default = code(f.default)
        elif f.default_factory is not MISSING:
            default = code(f.default_factory())
        else:
            default = "required"
        default = default.replace(str(Path.cwd()), ".")
        cells = (f"`{f.name}`", _type(f.type), default, _range(props.get(f.name, {})), docs.get(f.name, ""))
        lines.append("| " + " | ".join(cell(c) for c in cells) + " |")
    return lines


def config_page() -> str:
    """Every key of every table, with its type, default, range and meaning."""
    from measure.engine.options import SessionConfig
    from measure.policy import Policy
    from measure.record.io import schema
    from measure.suites.config import (
        FramingConfig,
        InstructionsConfig,
        LayoutSpec,
        PairSpec,
        RunConfig,
        TierSpec,
        WallclockConfig,
    )

    config = schema()["$defs"]["config"]["properties"]

    def items(name: str) -> dict[str, Any]:
        return config.get(name, {}).get("items", {})

    lines = [
        "# Suite config",
        "",
        GENERATED,
        "",
        "A suite config is one TOML file (`measure run --config suite.toml`; `measure init` writes one for a model",
        "repository). Paths are relative to the file. An unknown key, a value of the wrong type or one out of range",
        "is one line naming the file and the key, before anything is measured. Top level: `golden` (required), the",
        'path of the golden rows (JSON Lines, one `{"input": ..., "output": ...}` per line).',
    ]
    lines += _table("[[tiers]]", TierSpec, items("tiers"), "tiers", "One table per tier; exactly one `plain`.")
    lines += _table("[[pairs]]", PairSpec, items("pairs"), "pairs", "A drafter and a verifier of one kind.")
    lines += _table("[[layouts]]", LayoutSpec, items("layouts"), "layouts", "The same weights in two decoder layouts.")
    lines += _table("[session]", SessionConfig, config["session"], "session")
    lines += _table("[wallclock]", WallclockConfig, config["wallclock"], "wallclock")
    lines += _table("[framing]", FramingConfig, config["framing"], "framing")
    lines += _table("[instructions]", InstructionsConfig, config["instructions"], "instructions")
    lines += _table(
        "[run]",
        RunConfig,
        {"properties": {"budget": {"exclusiveMinimum": 0}}},  # the record stores seconds (run.budget_s)
        "run",
        "How the whole run is planned. `measure run --budget` overrides `budget`; an error about a budget names "
        "the one it came from (the flag, or this file's `[run] budget`).",
    )
    lines += _table(
        "[policy]",
        Policy,
        config["policy"],
        "policy",
        "The stated rules verdicts are judged by; a record stores its policy, so a change re-judges without a run.",
    )
    return "\n".join(lines) + "\n"


# --- quantization recipes -----------------------------------------------------------------------------------------


def recipes_page() -> str:
    """The named recipes with their settings, and every key a recipe file takes, from the dataclasses."""
    from measure.tools.recipes import NAMED, Keep, Recipe

    lines = [
        "# Quantization recipes",
        "",
        GENERATED,
        "",
        "`measure quantize SRC OUT --recipe NAME|FILE` makes a tier by a recipe; `tier.json` `quantization.recipe`",
        "records it whole. `--to int8`, `--to int8-static` and `--to int4` are the recipes of the same names.",
        "",
        "## Named recipes",
        "",
        "| name | what it makes | settings |",
        "|---|---|---|",
    ]
    for name, recipe in NAMED.items():
        settings = ", ".join(
            f"{k} = {code(v).strip('`')}" for k, v in recipe.to_dict().items() if k != "name" and v is not None
        )
        lines.append(f"| `{name}` | {cell(recipe.label)} | `{cell(settings)}` |")
    lines += [
        "",
        "## A recipe file",
        "",
        "TOML: the keys below at the top level (or `base = NAME` and the keys it changes), and a `[keep]` table.",
        "An unknown key, a setting the method does not take, or a value the quantizer does not support is one",
        "line naming the file and the key (exit 2); nothing is written.",
        "",
        "```toml",
        'base = "int8-nbits"',
        "accuracy_level = 0",
        "[keep]",
        'groups = ["lm_head"]',
        "last = 1",
        "```",
        "",
        "| key | default | meaning |",
        "|---|---|---|",
    ]
    defaults = {f.name: f.default for f in fields(Recipe)}
    for key, doc in field_docs(Recipe).items():
        default = defaults[key]
        shown = "" if default is MISSING or key == "keep" else "unset" if default is None else code(default)
        lines.append(f"| `{key}` | {shown} | {cell(doc)} |")
    lines += ["| `base` |  | a named recipe to start from; the other keys change it |", ""]
    lines += ["## `[keep]`", "", "| key | meaning |", "|---|---|"]
    lines += [f"| `{key}` | {cell(doc)} |" for key, doc in field_docs(Keep).items()]
    lines += [
        "",
        "Groups are read from node names (then weight names) as optimum and the demo export them: "
        "`/model/layers.3/self_attn/q_proj/MatMul` is attention of layer 3, `/model/layers.3/mlp/down_proj/MatMul` "
        "mlp, `/lm_head/MatMul` the LM head. A keep entry that names no MatMul of the tier is refused.",
    ]
    return "\n".join(lines) + "\n"


PAGES = {"cli.md": cli_page, "config.md": config_page, "schema.md": schema_page, "recipes.md": recipes_page}


def stale(folder: Path) -> list[str]:
    """The reference pages under ``folder`` that differ from what the code generates now (missing ones too)."""
    out = []
    for name, page in PAGES.items():
        target = folder / name
        if not target.is_file() or target.read_text(encoding="utf-8") != page():
            out.append(str(target))
    return out


def write(folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, page in PAGES.items():
        target = folder / name
        text = page()
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
            written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m measure.tools.reference", description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path, help="where the reference pages go (docs/reference)")
    p.add_argument("--check", action="store_true", help="write nothing; list stale pages and exit 1 if any")
    args = p.parse_args(argv)
    if args.check:
        found = stale(args.folder)
        for path in found:
            print(f"{path}: stale; regenerate with python -m measure.tools.reference {args.folder}")
        return 1 if found else 0
    for written in write(args.folder):
        print(f"wrote {written}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
