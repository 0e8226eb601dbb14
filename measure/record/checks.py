"""What the record's JSON Schema cannot say, checked once beside it: names that exist, arrays of matching lengths.

The schema (``schema/record-v*.schema.json``) holds each field's type and range; these checks hold the
relations between fields: every tier a part names is a key of ``tiers``, every per-row array has one entry
per golden row, a complete record has every repeat and run it promised. Each check is a small function over a
schema-valid document; :data:`CHECKS` runs them in order and the first problem raises, naming the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from measure.errors import MeasureError

Doc = dict[str, Any]
Check = Callable[[Doc, str], None]

CASE_SECONDS = ("wall_s", "run_s", "drafter_run_s", "verifier_run_s", "cpu_s", "tokenize_s", "first_token_s")
"""A case's samples: one list of one value per row, per repeat."""
CASE_PER_PASS = ("run_s", "drafter_run_s", "verifier_run_s", "cpu_s", "tokenize_s")
"""The samples every timed pass appends beside its ``wall_s``: as many repeats."""
CASE_COUNTS = ("calls", "source_tokens", "proposed", "accepted", "rounds", "bonus", "drafter_calls", "verifier_calls")
"""A case's per-row counts (one pass)."""
CASE_BY_POSITION = ("proposed_by_position", "accepted_by_position")
"""A speculative case's counts per draft position: one per k."""
LEG_PER_ROW = ("outputs", "output_ids")
"""A framing leg tier's per-row arrays."""
LAYOUT_PER_ROW = ("tokens", "calls")
LAYOUT_SECONDS = ("wall_s", "run_s")


def fail(source: str, where: str, message: str) -> MeasureError:
    return MeasureError(f"{source}: field {where}: {message}")


def rows_of(doc: Doc, suite: str) -> int:
    """The golden rows a suite decoded: all of them, or the sample a budgeted run's plan states."""
    plan = doc.get("plan")
    return len(plan[f"{suite}_rows"]) if plan else doc["golden"]["rows"]


def _parts(doc: Doc) -> tuple[Doc, Doc, Doc]:
    """The optional parts as dicts (empty where absent or null): wall-clock, framing, instructions."""
    return doc.get("wallclock") or {}, doc.get("framing") or {}, doc.get("instructions") or {}


# ------------------------------------------------------------------ tier names


def _tier_references(doc: Doc) -> Iterator[tuple[str, Any]]:
    """Every (field, tier name) a record's parts name, in document order."""
    wallclock, framing, instructions = _parts(doc)
    for i, pair in enumerate(doc["config"]["pairs"]):
        for key in ("drafter", "verifier"):
            yield f"config/pairs/{i}/{key}", pair[key]
    for name, case in (wallclock.get("cases") or {}).items():
        for key in ("tier", "drafter", "verifier"):
            if key in case:
                yield f"wallclock/cases/{name}/{key}", case[key]
    for name in (wallclock.get("call_costs") or {}).get("tiers") or {}:
        yield f"wallclock/call_costs/tiers/{name}", name
    yield from _later_references(framing, instructions)


def _later_references(framing: Doc, instructions: Doc) -> Iterator[tuple[str, Any]]:
    """The tiers the framing legs, the acceptance pairs and the instruction counts name."""
    for i, leg in enumerate(framing.get("legs") or []):
        for j, tier in enumerate(leg["tiers"]):
            yield f"framing/legs/{i}/tiers/{j}/tier", tier["tier"]
        for j, pair in enumerate(leg.get("speculative") or []):  # the onnxruntime-genai leg's pairs
            for key in ("drafter", "verifier"):
                yield f"framing/legs/{i}/speculative/{j}/{key}", pair[key]
    for i, acc in enumerate(framing.get("acceptance") or []):
        for key in ("drafter", "verifier"):
            yield f"framing/acceptance/{i}/{key}", acc[key]
    for name in instructions.get("tiers") or {}:
        yield f"instructions/tiers/{name}", name


def check_fidelity_references(doc: Doc, source: str) -> None:
    """Every judged tier's ``reference`` is one of the fidelity block's ``references``."""
    fid = doc.get("fidelity") or {}
    names = [r["name"] for r in fid.get("references") or []]
    known = ", ".join(names) or "none"
    for i, tier in enumerate(fid.get("tiers") or []):
        if tier["reference"] not in names:
            raise fail(
                source,
                f"fidelity/tiers/{i}/reference",
                f"reference {tier['reference']!r} is not in fidelity/references; expected one of {known}",
            )


def check_tier_names(doc: Doc, source: str) -> None:
    """One name per tier throughout: every tier a config, case, leg or pair names is a key of ``tiers``."""
    tiers = doc["tiers"]
    known = ", ".join(tiers)
    named = [t["name"] for t in doc["config"]["tiers"]]
    if sorted(named) != sorted(tiers):
        raise fail(source, "config/tiers", f"names {', '.join(named)} differ from the recorded tiers {known}")
    plain = [name for name, t in tiers.items() if t["role"] == "plain"]
    if len(plain) != 1:
        raise fail(source, "tiers", f"expected exactly one tier with role 'plain', got {len(plain)}")
    for where, name in _tier_references(doc):
        if name not in tiers:
            raise fail(source, where, f"tier {name!r} is not in tiers; expected one of {known}")


def check_explore(doc: Doc, source: str) -> None:
    """A search's candidates and the run's tiers tell one story: a candidate measured is a tier judged against its
    reference, a dropped one is no tier (unless it is the baseline the screening scored, which is timed all the
    same), and each reference is a tier of the run; one baseline at most per reference."""
    ex = doc.get("explore")
    if not ex:
        return
    tiers = doc["tiers"]
    for i, c in enumerate(ex["candidates"]):
        where = f"explore/candidates/{i}"
        if c["reference"] not in tiers:
            raise fail(source, f"{where}/reference", f"tier {c['reference']!r} is not in tiers")
        baseline = bool(c.get("baseline"))
        measured = c["dropped"] is None or (baseline and c["screen"] is not None)
        if measured and c["tier"] not in tiers:
            why = "dropped null" if c["dropped"] is None else "the baseline, screened"
            raise fail(source, f"{where}/tier", f"{c['tier']!r} is measured ({why}) but not in tiers")
        if not measured and c["tier"] in tiers:
            raise fail(source, f"{where}/tier", f"{c['tier']!r} is dropped ({c['dropped']}) but is a tier of the run")
        if c["dropped"] is not None and not c["reason"]:
            raise fail(source, f"{where}/reason", "a dropped candidate says why; got none")
    baselines = [c["reference"] for c in ex["candidates"] if c.get("baseline")]
    twice = next((r for r in baselines if baselines.count(r) > 1), None)
    if twice is not None:
        raise fail(source, "explore/candidates", f"reference {twice!r} has two baseline candidates; expected one")
    _check_shards(ex, doc, source)


def _check_shards(ex: Doc, doc: Doc, source: str) -> None:
    """A shard is one of its count; a join names one run per shard, and each anchor is a timed copy of the
    baseline beside a tier of the run; no record is both."""
    shard, joined = ex.get("shard"), ex.get("joined")
    if shard is not None and joined is not None:
        raise fail(source, "explore/joined", "a record is a shard or a join of shards, not both")
    if shard is not None and shard["index"] > shard["count"]:
        raise fail(source, "explore/shard/index", f"shard {shard['index']} of {shard['count']}; expected 1 to count")
    if joined is None:
        return
    runs = joined["runs"]
    if len(runs) != joined["count"] or len(set(runs)) != len(runs):
        raise fail(source, "explore/joined/runs", f"expected {joined['count']} distinct run ids (count), got {runs}")
    cases = (doc.get("wallclock") or {}).get("cases") or {}
    for tier, anchor in joined["anchors"].items():
        for name in (tier, anchor):
            if name not in doc["tiers"]:
                raise fail(source, f"explore/joined/anchors/{tier}", f"tier {name!r} is not in tiers")
        if cases and anchor not in cases:
            raise fail(source, f"explore/joined/anchors/{tier}", f"tier {anchor!r} has no wall-clock case to pair")


def check_case_keys(doc: Doc, source: str) -> None:
    """A case is keyed by what it measures: its tier, or ``drafter->verifier@k<k>``."""
    for name, case in ((doc.get("wallclock") or {}).get("cases") or {}).items():
        if case["kind"] == "speculative" and case["pair"] != f"{case['drafter']}->{case['verifier']}":
            raise fail(source, f"wallclock/cases/{name}/pair", "expected drafter->verifier")
        key = case["tier"] if case["kind"] == "greedy" else f"{case['pair']}@k{case['k']}"
        if name != key:
            raise fail(source, f"wallclock/cases/{name}", f"a {case['kind']} case is keyed {key!r}")


# ------------------------------------------------------------------ completeness


def check_complete(doc: Doc, source: str) -> None:
    """A complete record has every suite it lists, every wall-clock repeat and every callgrind run."""
    if not doc["complete"]:
        return
    for suite in doc["suites"]:
        if doc.get(suite) is None:
            raise fail(source, suite, "a complete record has every suite it lists; got null")
    wallclock, _, counted = _parts(doc)
    short = wallclock and wallclock["repeats_done"] < wallclock["repeats"]
    if wallclock and (short or (wallclock["repeats_done"] != wallclock["repeats"] and doc.get("plan") is None)):
        raise fail(
            source,
            "wallclock/repeats_done",
            f"a complete record has every repeat ({wallclock['repeats']}), got {wallclock['repeats_done']}",
        )
    for name, tier in (counted.get("tiers") or {}).items():
        if len(tier["instructions"]) != counted["runs"]:
            raise fail(
                source,
                f"instructions/tiers/{name}/instructions",
                f"a complete record has {counted['runs']} runs, got {len(tier['instructions'])}",
            )


def check_instruction_rows(doc: Doc, source: str) -> None:
    rows, counted = doc["golden"]["rows"], doc.get("instructions")
    if counted and counted["rows"] > rows:
        raise fail(source, "instructions/rows", f"expected at most the golden rows ({rows})")


# ------------------------------------------------------------------ per-row arrays


def _framing_rows(tier: Doc) -> Iterator[tuple[str, list[Any]]]:
    """A framing leg tier's per-row arrays, by their field below the tier."""
    for key in LEG_PER_ROW:
        if key in tier:
            yield key, tier[key]
    for b, block in enumerate(tier.get("blocks") or []):
        yield f"blocks/{b}/first_divergent_step", block["first_divergent_step"]
    quality = tier.get("quality") or {}
    if "cer" in quality:
        yield "quality/cer", quality["cer"]


def check_framing_rows(doc: Doc, source: str) -> None:
    """Every framing array that runs over the golden rows has one entry per row."""
    rows = rows_of(doc, "framing")
    for i, leg in enumerate((doc.get("framing") or {}).get("legs") or []):
        for j, tier in enumerate(leg["tiers"]):
            for key, values in _framing_rows(tier):
                if len(values) != rows:
                    raise fail(source, f"framing/legs/{i}/tiers/{j}/{key}", f"expected one per golden row ({rows})")


def check_acceptance_counts(doc: Doc, source: str) -> None:
    """No framing pair accepts more draft tokens than it proposed, at the probe or in the runtime's rounds."""
    for i, acc in enumerate((doc.get("framing") or {}).get("acceptance") or []):
        for part in ("probe", "runtime"):
            counts = acc.get(part)
            if counts and counts["accepted"] > counts["proposed"]:
                raise fail(source, f"framing/acceptance/{i}/{part}", "expected accepted <= proposed")


def check_genai_counts(doc: Doc, source: str) -> None:
    """The onnxruntime-genai leg's counts stay within the golden rows, and no pair accepts more than it drafted."""
    rows = doc["golden"]["rows"]
    for i, leg in enumerate((doc.get("framing") or {}).get("legs") or []):
        for j, tier in enumerate(leg["tiers"]):
            if "genai" in tier and tier["genai"]["equal_rows"] > rows:
                raise fail(source, f"framing/legs/{i}/tiers/{j}/genai/equal_rows", f"expected at most {rows} rows")
        for j, pair in enumerate(leg.get("speculative") or []):
            for part, counts in (("acceptance", pair.get("acceptance")), ("measure/acceptance", _ours(pair))):
                if counts and counts["accepted"] > counts["proposed"]:
                    raise fail(source, f"framing/legs/{i}/speculative/{j}/{part}", "expected accepted <= proposed")
            if pair.get("rows", 0) > rows or pair.get("equal_greedy_rows", 0) > pair.get("rows", 0):
                raise fail(source, f"framing/legs/{i}/speculative/{j}/rows", f"expected at most {rows} rows")


def _ours(pair: Doc) -> Doc | None:
    return (pair.get("measure") or {}).get("acceptance")


def check_call_costs(doc: Doc, source: str) -> None:
    """The cost model's samples: one column per timed width, one entry per timed row."""
    costs = (doc.get("wallclock") or {}).get("call_costs") or {}
    for name, t in (costs.get("tiers") or {}).items():
        where, rows = f"wallclock/call_costs/tiers/{name}", costs["rows"]
        if len(set(t["n"])) != len(t["n"]):
            raise fail(source, f"{where}/n", f"expected each width once, got {t['n']}")
        if len(t["cache_tokens"]) != rows:
            raise fail(source, f"{where}/cache_tokens", f"expected one per timed row ({rows})")
        if any(len(rep) != len(t["n"]) or any(len(w) != rows for w in rep) for rep in t["call_s"]):
            raise fail(source, f"{where}/call_s", f"expected per repeat one list per width n of {rows} seconds")


def check_layouts(doc: Doc, source: str) -> None:
    """Both layouts of a pair decode every golden row (the plan's sample), as many times each."""
    rows = rows_of(doc, "wallclock")
    for name, pair in ((doc.get("wallclock") or {}).get("layouts") or {}).items():
        for side in ("merged", "split"):
            v, where = pair[side], f"wallclock/layouts/{name}/{side}"
            for key in LAYOUT_PER_ROW:
                if len(v[key]) != rows:
                    raise fail(source, f"{where}/{key}", f"expected one per golden row ({rows})")
            for key in LAYOUT_SECONDS:
                if any(len(rep) != rows for rep in v[key]):
                    raise fail(source, f"{where}/{key}", f"expected one list of {rows} seconds per repeat")
        if len(pair["merged"]["wall_s"]) != len(pair["split"]["wall_s"]):
            raise fail(source, f"wallclock/layouts/{name}", "expected as many repeats of each layout")


def _check_case(doc: Doc, name: str, case: Doc, source: str) -> None:
    rows, where = rows_of(doc, "wallclock"), f"wallclock/cases/{name}"
    _check_case_repeats(doc, case, rows, where, source)
    _check_case_samples(case, rows, where, source)
    _check_case_counts(case, rows, where, source)


def _check_case_repeats(doc: Doc, case: Doc, rows: int, where: str, source: str) -> None:
    """A token count per golden row, and as many repeats as the config asked (more only where a budget topped up)."""
    wallclock = doc["wallclock"]
    if len(case["tokens"]) != rows:
        raise fail(source, f"{where}/tokens", f"expected one per golden row ({rows})")
    topped_up = doc.get("plan") is not None and len(case["wall_s"]) > wallclock["repeats"]  # a budget's top-up
    if doc["complete"] and len(case["wall_s"]) != wallclock["repeats"] and not topped_up:
        raise fail(
            source,
            f"{where}/wall_s",
            f"a complete record has {wallclock['repeats']} repeats, got {len(case['wall_s'])}",
        )
    if len(case["wall_s"]) and not sum(case["tokens"]):
        raise fail(source, f"{where}/tokens", "timed, but no token was decoded")


def _check_case_samples(case: Doc, rows: int, where: str, source: str) -> None:
    """One sample per golden row in every repeat, and one list per repeat of ``wall_s``."""
    for key in CASE_SECONDS:
        if any(len(rep) != rows for rep in case.get(key, [])):
            raise fail(source, f"{where}/{key}", f"expected one list of {rows} seconds per repeat")
    repeats = len(case["wall_s"])
    for key in CASE_PER_PASS:
        if key in case and len(case[key]) != repeats:
            raise fail(source, f"{where}/{key}", f"expected one list per repeat of wall_s ({repeats})")
    if len(case.get("first_token_s", [])) > repeats:
        raise fail(source, f"{where}/first_token_s", f"expected at most one list per repeat of wall_s ({repeats})")


def _check_case_counts(case: Doc, rows: int, where: str, source: str) -> None:
    """A case's counts: one per draft position (``k``) or per golden row, never more accepted than proposed."""
    for key in CASE_BY_POSITION:
        if key in case and len(case[key]) != case["k"]:
            raise fail(source, f"{where}/{key}", f"expected {case['k']} counts (k)")
    for accepted, proposed in (("accepted", "proposed"), ("accepted_by_position", "proposed_by_position")):
        if any(a > p for a, p in zip(case.get(accepted, ()), case.get(proposed, ()), strict=False)):
            raise fail(source, f"{where}/{accepted}", f"expected at most {proposed}, entry by entry")
    for key in CASE_COUNTS:
        if key in case and len(case[key]) != rows:
            raise fail(source, f"{where}/{key}", f"expected {rows} counts")


def check_cases(doc: Doc, source: str) -> None:
    """Every wall-clock case: one token count per golden row, one sample per row in every repeat."""
    for name, case in ((doc.get("wallclock") or {}).get("cases") or {}).items():
        _check_case(doc, name, case, source)


CHECKS: tuple[Check, ...] = (
    check_tier_names,
    check_explore,
    check_case_keys,
    check_fidelity_references,
    check_complete,
    check_instruction_rows,
    check_framing_rows,
    check_acceptance_counts,
    check_genai_counts,
    check_call_costs,
    check_layouts,
    check_cases,
)
"""In the order they run: names first (a later check indexes ``tiers`` by them), then lengths."""


def check(doc: Doc, source: str) -> None:
    """Raise :class:`~measure.errors.MeasureError` on the first relation a schema-valid record breaks."""
    for step in CHECKS:
        step(doc, source)
