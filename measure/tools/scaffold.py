"""What ``measure init`` writes into a model repository: a starter suite config read from its tier folders,
a golden-rows template, the RESULTS site's config (for the site generator it has: :mod:`measure.site.hosts`)
and the workflow that calls measure's reusable one.

Nothing here overwrites a file: one that exists is kept and reported, so a second
``measure init`` changes nothing. The roles and pairs are a proposal read from
the tiers' own files (layout, precision from the graphs' operators, model shape,
tokenizer vocabulary), never from folder names.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from measure.engine.kind import CAUSAL_LAYOUT_FILES, GENAI_MARKER
from measure.engine.lineage import find_source, lineage
from measure.engine.load import load_tier
from measure.engine.seq2seq.graphs import LAYOUT_FILES
from measure.engine.session import SessionConfig
from measure.errors import MeasureError
from measure.policy import Policy
from measure.site.hosts import HOSTS, PLUGIN_BLOCK, Host, nav_toml, nav_yaml, site_config
from measure.suites.config import FramingConfig, WallclockConfig
from measure.tools.continuations import chat_prompt, continuations, read_prompts
from measure.tools.roles import Proposal, propose, read_tier
from measure.writing import toml_value

CONFIG = Path("measure.toml")
GOLDEN = Path("golden.jsonl")
HOME = Path("docs/index.md")
WORKFLOW = Path(".github/workflows/measure.yml")

UPSTREAM = "measure-dev/measure"
"""measure's GitHub repository: where callers find the reusable workflow and the reusable workflow finds measure."""
REUSABLE = f"{UPSTREAM}/.github/workflows/reusable.yml@main"
"""What a caller's ``uses:`` names; pin a release tag or commit instead of main once there is one."""
RUNNERS = ("ubuntu-24.04",)
PYTHON = "3.11"
SKIP_DIRS = {".git", ".venv", "venv", "node_modules", "site", "results", "__pycache__", "build", "dist"}


def is_tier_folder(folder: Path) -> bool:
    """A complete seq2seq or decoder-only layout (an onnxruntime-genai folder is not measured: left out)."""
    if any(all((folder / f).is_file() for f in files) for files in LAYOUT_FILES.values()):
        return True
    if (folder / GENAI_MARKER).is_file():
        return False
    return any(all((folder / f).is_file() for f in files) for files in CAUSAL_LAYOUT_FILES.values())


def find_tier_folders(root: Path, depth: int = 3) -> list[Path]:
    """Folders under ``root`` holding a complete graph layout, for ``measure init`` with no TIER_DIR."""
    found: list[Path] = []

    def walk(folder: Path, left: int) -> None:
        if is_tier_folder(folder):
            found.append(folder)
            return
        if left == 0:
            return
        for child in sorted(p for p in folder.iterdir() if p.is_dir()):
            if child.name not in SKIP_DIRS and not child.name.startswith("."):
                walk(child, left - 1)

    walk(root, depth)
    return found


def _table(name: str, values: dict[str, Any]) -> str:
    return f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())


def _relative(path: Path, base: Path) -> str:
    """``path`` as the config writes it: relative to the config's folder where it can be."""
    try:
        return path.resolve().relative_to(base.resolve()).as_posix() or "."
    except ValueError:
        return path.resolve().as_posix()


BUDGET_BYTES = 100 * 10**6
"""A tier folder above this gets a proposed ``[run] budget``: unbudgeted, a run of a 135M-parameter model's tiers
took about 2.5 hours on 2 cores (most of it other runtimes' framing), budgeted it holds the budget."""
BUDGET = "15m"


@dataclass(frozen=True)
class Extras:
    """What ``measure init`` adds to the config beyond roles and pairs, each with its reason."""

    references: dict[str, tuple[str, str]]
    """Quantized tier -> (the full-precision tier its graphs were made from, why)."""
    prompt: str | None = None
    """The prompt template every decoder-only tier reads its rows with (a chat template, rendered)."""
    max_new_tokens: int | None = None
    """The decode length the golden continuations were made with, for both suites."""


def references(proposal: Proposal) -> tuple[dict[str, tuple[str, str]], list[str]]:
    """Each quantized tier's source among the tiers, told by the graphs (:mod:`measure.engine.lineage`), and a note
    for each that has none."""
    found = {t.name: lineage(t.facts.path) for t in proposal.tiers}
    out, notes = {}, []
    for t in proposal.tiers:
        if found[t.name].full:
            continue
        source = find_source(found[t.name], found)
        if source.name is not None:
            out[t.name] = (source.name, source.why)
        else:
            notes.append(
                f"{t.name} has no reference ({source.why}): its fidelity is not judged until its [[tiers]] entry "
                'says reference = "TIER" (a tier name, or the folder of its full-precision source)'
            )
    return out, notes


def suite_toml(proposal: Proposal, golden: Path, base: Path, extras: Extras | None = None) -> str:
    """The starter suite config, in the bundled demo's format; every knob stated at measure's default."""
    extras = extras or Extras({})
    wallclock = asdict(WallclockConfig())
    framing = asdict(FramingConfig())
    parts = [
        "# Suite config written by `measure init`: the roles and pairs are a proposal, edit them freely.\n"
        "# Paths are relative to this file; measure's bundled demo.toml is a complete example.\n"
        f"golden = {toml_value(_relative(golden, base))}\n",
        _table("session", asdict(SessionConfig())),
    ]
    largest = max(t.facts.total_bytes for t in proposal.tiers)
    if largest > BUDGET_BYTES:
        parts.append(
            f"# the largest tier is {largest / 1e6:.0f} MB: unbudgeted, a run of this size takes hours (every tier\n"
            "# framed in four runtimes); the budget plans the run to fit (docs: guide/large-models.md)\n"
            + _table("run", {"budget": BUDGET})
        )
    for t in proposal.tiers:
        entry = (
            f"[[tiers]]\nname = {toml_value(t.name)}\npath = {toml_value(_relative(t.facts.path, base))}\n"
            f"role = {toml_value(t.role)}  # {t.facts.describe()}\n"
        )
        if t.name in extras.references:
            source, why = extras.references[t.name]
            entry += f"reference = {toml_value(source)}  # fidelity is judged against it: {why}\n"
        if extras.prompt is not None and t.facts.kind == "causal":
            entry += f"prompt = {toml_value(extras.prompt)}  # the tokenizer's chat template (--chat-template)\n"
        parts.append(entry)
    for drafter, verifier in proposal.pairs:
        parts.append(f"[[pairs]]\ndrafter = {toml_value(drafter)}\nverifier = {toml_value(verifier)}\n")
    limit = {"max_new_tokens": extras.max_new_tokens} if extras.max_new_tokens else {}
    parts.append(_table("wallclock", {k: wallclock[k] for k in ("warmup", "warmup_s", "repeats", "k")} | limit))
    parts.append(_table("framing", {k: framing[k] for k in ("k", "node_leg")} | limit))
    parts.append(_table("policy", asdict(Policy())))
    return "\n".join(parts)


GOLDEN_TEMPLATE = (
    json.dumps({"input": "replace this row with a source text", "output": "and the output it must decode to"}) + "\n"
)
"""One placeholder row: golden rows are JSONL, one ``{"input", "output"}`` object a line, with no comments."""


def _site_notes(root: Path, host: Host) -> tuple[Path, list[str]]:
    """The site config ``host`` reads in ``root`` (one that exists, else the one to write) and what to add to it."""
    existing = [root / h.config for h in (host, HOSTS["mkdocs"]) if (root / h.config).exists()]
    if not existing:
        return root / host.config, []
    path = existing[0]
    name = path.relative_to(root).as_posix()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise MeasureError(f"{path}: cannot read this site config ({getattr(exc, 'strerror', None) or exc})") from exc
    if host.plugin and "measure" not in text:
        return path, [f"{name} exists: add measure to its plugins:\n{PLUGIN_BLOCK}"]
    if not host.plugin and "results/index.md" not in text:
        nav = nav_toml() if path.suffix == ".toml" else nav_yaml()
        return path, [f"{name} exists: Zensical runs no plugin, so list measure's pages in its nav:\n{nav}"]
    return path, []


HOME_PAGE = """# RESULTS

What measure measured on this repository's model tiers: see the Results section.
"""


def caller_workflow(config: str, runners: tuple[str, ...] = RUNNERS, python: str = PYTHON, site: str = "mkdocs") -> str:
    """The few lines a repository needs: measure's reusable workflow, publishing on main, comparing on PRs."""
    with_ = (
        f"      config: {config}\n      runners: '{json.dumps(list(runners))}'\n      python-version: \"{python}\"\n"
        f"      site: {site}\n"
    )
    return f"""# measure: on a push to main, measure on every runner, keep the records on the `results` branch and
# publish the RESULTS site to GitHub Pages (Settings > Pages > Source: "GitHub Actions"); on a pull
# request, measure it and compare with its merge base (a slower case or a failed gate fails the check).
name: measure

on:
  push:
    branches: [main]
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  publish:
    if: github.event_name != 'pull_request'
    uses: {REUSABLE}
    permissions:
      contents: write
      pages: write
      id-token: write
    with:
{with_}      publish: true

  compare:
    if: github.event_name == 'pull_request'
    uses: {REUSABLE}
    with:
{with_}      publish: false
"""


@dataclass(frozen=True)
class Planned:
    """One file ``measure init`` writes; ``text`` is None when the file exists (nothing is worked out for it)."""

    path: Path
    text: str | None
    why: str


@dataclass(frozen=True)
class ScaffoldFile:
    """What ``measure init`` did with one planned file: wrote it, or kept the one already there."""

    path: Path
    wrote: bool
    why: str


@dataclass(frozen=True)
class Prompts:
    """``measure init --prompts``: golden rows to make from plain prompts with the reference tier."""

    path: Path
    chat_template: bool = False
    max_new_tokens: int = 32


def _continued(proposal: Proposal, prompts: Prompts, root: Path) -> tuple[Planned, str | None]:
    """The golden rows the reference tier continues ``prompts`` into, and the prompt template it read them with."""
    causal = [t for t in proposal.tiers if t.facts.kind == "causal"]
    reference = next((t for t in causal if t.role == "reference"), None) or next(
        (t for t in causal if t.facts.precision in ("fp32", "fp16")), None
    )
    if reference is None:
        raise MeasureError(
            f"--prompts {prompts.path}: no full-precision decoder-only tier among the tiers to continue them with; "
            "name its folder too, or give --golden rows"
        )
    texts = read_prompts(prompts.path)
    template = chat_prompt(reference.facts.path) if prompts.chat_template else None
    tier = load_tier(reference.facts.path, prompt=template)
    made = continuations(tier, texts, prompts.max_new_tokens)
    how = "its chat template applied" if template else "no chat template"
    why = (
        f"golden rows: {reference.name}'s own greedy continuations of the {made.rows} prompts of {prompts.path.name} "
        f"({made.max_new_tokens} new tokens each, {how}): a quantized tier is held to what its reference says"
    )
    return Planned(root / GOLDEN, made.text, why), template


def plan(
    root: Path,
    tier_dirs: list[Path],
    golden: Path | None,
    host: Host = HOSTS["mkdocs"],
    prompts: Prompts | None = None,
) -> tuple[list[Planned], list[str]]:
    """Every file ``measure init`` writes under ``root``, those that exist included, and notes for the user.

    ``host``: the site generator (its config is written when no site config of it is there); ``prompts``: make the
    golden rows from plain prompts, the reference tier's greedy continuations."""
    planned: list[Planned] = []
    notes: list[str] = []
    if (root / CONFIG).exists():
        planned.append(Planned(root / CONFIG, None, ""))
    else:
        folders = tier_dirs or find_tier_folders(root)
        if not folders:
            raise MeasureError(
                f"{root}: no tier folders found (a folder with encoder_model.onnx + decoder_model.onnx + "
                "decoder_with_past_model.onnx, or decoder_model_merged.onnx, or encoder.onnx + decoder-kv.onnx); "
                "name them: measure init TIER_DIR..."
            )
        proposal = propose([read_tier(f) for f in dict.fromkeys(f.resolve() for f in folders)])
        notes.extend(proposal.notes)
        found, unfound = references(proposal)
        notes.extend(unfound)
        rows: list[Planned] = []
        template = None
        if prompts is not None:
            if (root / GOLDEN).exists():
                raise MeasureError(f"{root / GOLDEN}: exists; --prompts writes the golden rows there: move it first")
            made, template = _continued(proposal, prompts, root)
            golden = made.path
            rows.append(made)
        elif golden is None:
            golden = root / GOLDEN
            text = None if golden.exists() else GOLDEN_TEMPLATE
            rows.append(Planned(golden, text, "a golden-rows template: replace its row with yours, one JSON a line"))
        else:
            from measure.suites.golden import load_golden

            load_golden(golden)  # a bad file is reported now, not at the first run
        roles = ", ".join(f"{t.name} {t.role}" for t in proposal.tiers)
        pairs = ", ".join(f"{d}->{v}" for d, v in proposal.pairs) or "none"
        extras = Extras(found, template, prompts.max_new_tokens if prompts else None)
        said = f"tiers {roles}; pairs {pairs}"
        said += "".join(f"; {t} judged against {s}" for t, (s, _) in found.items())
        if max(t.facts.total_bytes for t in proposal.tiers) > BUDGET_BYTES:
            said += f"; [run] budget = {BUDGET} (tiers over {BUDGET_BYTES // 10**6} MB)"
        planned.append(Planned(root / CONFIG, suite_toml(proposal, golden, root, extras), said))
        planned.extend(rows)
    site, site_notes = _site_notes(root, host)
    if site.exists():
        planned.append(Planned(site, None, ""))
        notes.extend(site_notes)
    else:
        text = site_config(host, f"{root.resolve().name} RESULTS")
        planned.append(Planned(site, text, f"the RESULTS site, built by {host.name}: {host.build}"))
        home = root / HOME
        planned.append(Planned(home, None if home.exists() else HOME_PAGE, "the site's home page"))
    workflow = root / WORKFLOW
    text = None if workflow.exists() else caller_workflow(CONFIG.as_posix(), site=host.name)
    planned.append(Planned(workflow, text, "calls measure's reusable workflow: publishes on main, compares PRs"))
    return planned, notes


def write_new(planned: list[Planned]) -> list[ScaffoldFile]:
    """Write each planned file that does not exist yet; an existing one is never touched."""
    done = []
    for p in planned:
        if p.text is None or p.path.exists():
            done.append(ScaffoldFile(p.path, False, "exists, kept as it is"))
            continue
        p.path.parent.mkdir(parents=True, exist_ok=True)
        with p.path.open("x", encoding="utf-8") as f:  # "x": a file that appeared meanwhile is not overwritten
            f.write(p.text)
        done.append(ScaffoldFile(p.path, True, p.why))
    return done
