"""A hostile corpus: bad inputs and faults against every verb, each with the outcome it must have.

Outcomes:

* ``error``: exit 2 and exactly one line on stderr, ``measure VERB: error: ...``,
  naming the file, field or line (every string in ``names``), no traceback;
* ``inert``: the verb succeeds and what it prints or renders carries the
  hostile strings as inert text (no raw control characters, no live markup);
* ``contained``: whatever the verb answers, nothing is written outside its
  target tree (the files outside are the same before and after).

Inputs are built from the bundled demo and ``tests/data`` records, copied into
``tmp_path`` and mutated. Verbs run in-process through :func:`measure.cli.main`
(fast), or as a subprocess where stdin bytes or a resource limit are the input.
"""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from tests_support import ROOT, write_config

from measure import bundled
from measure.cli import main
from measure.record.io import MACHINE_ID, load_record
from measure.site.asset_block import LOADER

DATA = ROOT / "tests" / "data"
V2 = json.loads((DATA / "record-v2.json").read_text(encoding="utf-8"))
V4 = load_record(DATA / "record-v4.json")
"""The v4 fixture unpacked: the fidelity pass's facts; a plan added where a case needs one."""
ESC = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"
"""Retitles the window, clears the screen, turns text red: must never reach a terminal raw."""

Build = Callable[[Path], list[str]]
Check = Callable[[Path, str, str], None]


@dataclass(frozen=True)
class Case:
    verb: str
    build: Build
    """Makes the inputs under the test's folder and returns the verb's arguments."""
    expect: str
    """error, inert or contained."""
    names: tuple[str, ...] = ()
    """What the one error line must name (file, field, line)."""
    check: Check | None = None
    """More to hold of an ``inert`` or ``contained`` outcome: (tmp, stdout, stderr)."""
    stdin: bytes | None = None
    fsize: int | None = None
    """RLIMIT_FSIZE in bytes for the subprocess: a disk that fills up."""
    codes: tuple[int, ...] = (0,)
    """Exit codes an inert or contained outcome may have."""
    target: str = "results"
    """For ``contained``: the tree the verb may write into (relative to tmp)."""
    env: dict[str, str] = field(default_factory=dict)


# ---------------------------------------------------------------- inputs


def doc() -> dict[str, Any]:
    return copy.deepcopy(V2)


def doc4() -> dict[str, Any]:
    return copy.deepcopy(V4)


def put(tmp: Path, d: dict[str, Any], *, machine: str | None = None, name: str | None = None, raw: str = "") -> Path:
    """Write a record where the tree layout puts it (or where told)."""
    path = tmp / "results" / (machine or d["machine_id"]) / (name or f"{d['run_id']}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(raw or json.dumps(d), encoding="utf-8")
    return path


def setting(*keys: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(d: dict[str, Any]) -> None:
        node = d
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return apply


def rename_tier(d: dict[str, Any], old: str, new: str) -> None:
    """One tier renamed consistently everywhere a record names it."""
    d["tiers"] = {new if k == old else k: v for k, v in d["tiers"].items()}
    for t in d["config"]["tiers"]:
        t["name"] = new if t["name"] == old else t["name"]
    for p in d["config"]["pairs"]:
        for key in ("drafter", "verifier"):
            p[key] = new if p[key] == old else p[key]
    cases = {}
    for name, case in d["wallclock"]["cases"].items():
        for key in ("tier", "drafter", "verifier"):
            if case.get(key) == old:
                case[key] = new
        if case["kind"] == "speculative":
            case["pair"] = f"{case['drafter']}->{case['verifier']}"
            name = f"{case['pair']}@k{case['k']}"
        else:
            name = case["tier"]
        cases[name] = case
    d["wallclock"]["cases"] = cases
    for leg in d["framing"]["legs"]:
        for t in leg["tiers"]:
            t["tier"] = new if t["tier"] == old else t["tier"]
    for a in d["framing"]["acceptance"]:
        for key in ("drafter", "verifier"):
            a[key] = new if a[key] == old else a[key]


def record(
    verb: str, *mutations: Callable[[dict[str, Any]], None], base: Callable[[], dict[str, Any]] = doc, **where: Any
) -> Build:
    """A mutated copy of the v2 fixture (or ``base``'s record) in a results tree; the verb's arguments for it."""

    def build(tmp: Path) -> list[str]:
        d = base()
        for m in mutations:
            m(d)
        path = put(tmp, d, **where)
        if verb in ("check", "calibrate"):
            return ["--results", str(tmp / "results")] if verb == "check" else [str(tmp / "results")]
        if verb == "render":
            return ["--results", str(tmp / "results"), "--out", str(tmp / "out")]
        if verb == "compare":
            return [str(DATA / "record-v2.json"), str(path)]
        return [str(path)]

    return build


def raw_record(verb: str, text: bytes, suffix: str = ".json") -> Build:
    def build(tmp: Path) -> list[str]:
        path = tmp / "results" / V2["machine_id"] / f"{V2['run_id']}{suffix}"
        path.parent.mkdir(parents=True)
        path.write_bytes(text)
        return [str(path)] if verb != "check" else ["--results", str(tmp / "results")]

    return build


def tier_copy(tmp: Path, change: dict[str, Any] | None = None, raw: bytes | None = None, src: Path = bundled.LITE):
    folder = tmp / "tier"
    shutil.copytree(src, folder)
    meta_path = folder / "tier.json"
    if raw is not None:
        meta_path.write_bytes(raw)
    elif change is not None:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        meta.update(change)
        meta_path.write_text(json.dumps(meta), encoding="utf-8")
    return folder


def decoding(change: dict[str, Any] | None = None, raw: bytes | None = None, extra: tuple[str, ...] = ()) -> Build:
    def build(tmp: Path) -> list[str]:
        return [str(tier_copy(tmp, change, raw)), "привет", *extra]

    return build


def _pair_of_two_vocabularies(tmp: Path) -> list[str]:
    """The drafter's folder is a copy of small-int4 whose tokenizer swaps two ids: no shared vocabulary."""
    drafter = tmp / "small-int4-swapped"
    shutil.copytree(bundled.LITE, drafter)
    doc = json.loads((drafter / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = doc["model"]["vocab"]
    vocab["a"], vocab["b"] = vocab["b"], vocab["a"]
    (drafter / "tokenizer.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    path = config_text(
        tmp, lambda t: t.replace(f'path = "{bundled.LITE.as_posix()}"', f'path = "{drafter.as_posix()}"')
    )
    return ["--config", str(path), "--results", str(tmp / "results")]


def config_text(tmp: Path, edit: Callable[[str], str]) -> Path:
    path = write_config(tmp, rows=2, repeats=1)
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    return path


def run_config(edit: Callable[[str], str]) -> Build:
    def build(tmp: Path) -> list[str]:
        return ["--config", str(config_text(tmp, edit)), "--results", str(tmp / "results")]

    return build


def replace(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new)

    return edit


def append(extra: str) -> Callable[[str], str]:
    return lambda text: text + extra


def quick(text: str) -> str:
    """The mini config cut to the least work: no Node leg, one small block size, no warm-up seconds."""
    return text.replace("k = [2, 4]", "k = [2]") + "node_leg = false\nwhole_prefix = false\n"


# ---------------------------------------------------------------- checks


def no_raw_control(tmp: Path, out: str, err: str) -> None:
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", out + err), (out + err)[:400]
    assert "\\x1b" in out + err  # shown, escaped


def rendered_inert(tmp: Path, out: str, err: str) -> None:
    pages = "".join(p.read_text(encoding="utf-8") for p in (tmp / "out").rglob("*.md"))
    assert LOADER in pages  # measure's own one-line asset loader: the only script a page holds
    assert "<script" not in pages.replace(LOADER, "") and "<img src=x" not in pages
    assert "\x1b" not in pages
    metrics = (tmp / "out" / "metrics.json").read_text(encoding="utf-8")
    assert "NaN" not in metrics and "Infinity" not in metrics


def columns_apart(tmp: Path, out: str, err: str) -> None:
    long = "onnx-split-fp32fp32-with-a-long-name"
    rows = [line for line in out.splitlines() if line.strip().startswith(long)]
    assert rows and all(line.strip()[len(long)] == " " for line in rows), out


def merged(added: int, duplicates: int = 0, invalid: int = 0) -> Check:
    def check(tmp: Path, out: str, err: str) -> None:
        assert f"{added} added, {duplicates} duplicate(s)" in out, out
        assert f"{invalid} invalid" in out, out

    return check


def absent(*rels: str) -> Check:
    def check(tmp: Path, out: str, err: str) -> None:
        for rel in rels:
            assert not (tmp / rel).exists() and not (tmp / rel).is_symlink(), rel

    return check


def no_partial(tmp: Path, out: str, err: str) -> None:
    """A failed quantize leaves nothing, so the retry (on a repaired graph) works."""
    assert not (tmp / "q").exists()
    assert not [p for p in tmp.iterdir() if p.name.endswith(".partial")]
    shutil.copy2(bundled.SMALL_FP32 / "decoder-kv.onnx", tmp / "tier" / "decoder-kv.onnx")
    assert main(["quantize", str(tmp / "tier"), str(tmp / "q"), "--to", "int8"]) == 0
    assert (tmp / "q" / "tier.json").is_file()


def record_consistent(tmp: Path, out: str, err: str) -> None:
    """The run named its tier by the config everywhere, and the record renders."""
    (path,) = (tmp / "results").glob("*/*.json")
    d = load_record(path)  # the document, whatever packing the file stores it in
    names = set(d["tiers"])
    assert "lite-renamed" in names and "small-int4" not in names
    assert {t["tier"] for leg in d["framing"]["legs"] for t in leg["tiers"]} <= names
    assert {a[k] for a in d["framing"]["acceptance"] for k in ("drafter", "verifier")} <= names
    assert {c.get("drafter", c.get("tier")) for c in d["wallclock"]["cases"].values()} <= names
    assert main(["render", "--results", str(tmp / "results"), "--out", str(tmp / "out")]) == 0


def kept_last_record(tmp: Path, out: str, err: str) -> None:
    (path,) = (tmp / "results").glob("*/*.json")
    assert main(["validate", str(path)]) == 0
    d = json.loads(path.read_text(encoding="utf-8"))
    assert d["complete"] is False


def machine_id_is_a_plain_folder_name(tmp: Path, out: str, err: str) -> None:
    line = next(x for x in out.splitlines() if x.startswith("machine_id"))
    assert MACHINE_ID.fullmatch(line.split()[1])


# ---------------------------------------------------------------- the corpus


def _cal_symlink(tmp: Path) -> list[str]:
    d = doc()
    put(tmp, d)
    outside = tmp / "outside"
    outside.mkdir()
    (tmp / "results" / d["machine_id"] / "calibration.json").symlink_to(outside / "calibration.json")
    return [str(tmp / "results"), "--write"]


def _cal_folder_symlink(tmp: Path) -> list[str]:
    d = doc()
    outside = tmp / "outside"
    put(tmp, d, machine="x")
    shutil.move(tmp / "results" / "x", outside)
    (tmp / "results" / d["machine_id"]).symlink_to(outside, target_is_directory=True)
    return [str(tmp / "results"), "--write"]


def _merge(*docs_or_files: Any, into: Callable[[Path], None] | None = None) -> Build:
    def build(tmp: Path) -> list[str]:
        src = tmp / "artifacts"
        for i, item in enumerate(docs_or_files):
            path = src / f"a{i}" / "rec.json"
            path.parent.mkdir(parents=True)
            if isinstance(item, bytes):
                path.write_bytes(item)
            else:
                path.write_text(json.dumps(item(doc()) if callable(item) else item), encoding="utf-8")
        (tmp / "results").mkdir(exist_ok=True)
        if into:
            into(tmp)
        return [str(src), "--into", str(tmp / "results")]

    return build


def _with(*mutations: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def make(d: dict[str, Any]) -> dict[str, Any]:
        for m in mutations:
            m(d)
        return d

    return make


def _corrupt_target(tmp: Path) -> None:
    target = tmp / "results" / V2["machine_id"] / f"{V2['run_id']}.json"
    target.parent.mkdir(parents=True)
    target.write_text("{not json", encoding="utf-8")


def _dangling_target(tmp: Path) -> None:
    target = tmp / "results" / V2["machine_id"] / f"{V2['run_id']}.json"
    target.parent.mkdir(parents=True)
    target.symlink_to(tmp / "outside" / "written.json")


def _machine_link_outside(tmp: Path) -> None:
    (tmp / "outside").mkdir()
    (tmp / "results" / V2["machine_id"]).symlink_to(tmp / "outside", target_is_directory=True)


def _broken_archive(tmp: Path) -> list[str]:
    """A month archive cut short beside a good record."""
    path = put(tmp, doc())
    whole = gzip.compress(b'{"measure_archive": 1, "members": {}}')
    (path.parent / "2026-01.archive.json.gz").write_bytes(whole[: len(whole) // 2])
    return [str(tmp / "results")]


def _archive_not_utf8(tmp: Path) -> list[str]:
    """A past month's record file that is not UTF-8, beside this month's good record."""
    path = put(tmp, doc())
    (path.parent / "20261101T000000Z-badbad.json").write_bytes(b'{"run_id": "\xff\xfe"}')
    return [str(tmp / "results"), "--keep", "0"]


def _nothing_archived(tmp: Path, files: int) -> None:
    """Every record file is where it was, and no archive was written."""
    machine = tmp / "results" / V2["machine_id"]
    assert len(list(machine.glob("*.json"))) == files and not list(machine.glob("*.archive.json.gz"))


def _fidelity_no_output(tmp: Path) -> list[str]:
    rows = tmp / "rows.jsonl"
    rows.write_text(json.dumps({"input": "да", "output": ""}) + "\n", encoding="utf-8")
    return [str(bundled.DEMO_DIR / "base-fp32"), str(bundled.DEMO_DIR / "base-int8"), "--golden", str(rows)]


def _long_output_rows(tmp: Path, chars: int) -> Path:
    """Three demo golden rows, the second's expected output ``chars`` letters long (the demo's tokenizer gives a
    token a letter)."""
    lines = bundled.GOLDEN.read_text(encoding="utf-8").splitlines()[:3]
    rows = [json.loads(line) for line in lines]
    rows[1]["output"] = "a" * chars
    path = tmp / "rows.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _fidelity_long_output(reference: str, tier: str, chars: int) -> Build:
    def build(tmp: Path) -> list[str]:
        rows = _long_output_rows(tmp, chars)
        return [str(bundled.DEMO_DIR / reference), str(bundled.DEMO_DIR / tier), "--golden", str(rows)]

    return build


def _run_long_output(tmp: Path) -> list[str]:
    """The mini config, its second golden row's output longer than the seq2seq tiers' 64 target positions."""
    path = config_text(tmp, quick)
    _long_output_rows(tmp, 72)
    return ["--config", str(path), "--suite", "framing", "--results", str(tmp / "results")]


def _broken_logits(tmp: Path, **edit: Any) -> Path:
    """A copy of base-int8 named onnx-x whose logits are transformed (``scale``, ``bias``) into NaN or infinity."""
    from graph_edits import edit_logits

    return edit_logits(bundled.PLAIN, tmp / "onnx-x", **edit)


def _fidelity_broken(**edit: Any) -> Build:
    def build(tmp: Path) -> list[str]:
        return [str(bundled.REFERENCE), str(_broken_logits(tmp, **edit)), "--rows", "3", "--json"]

    return build


def _run_nan_tier(tmp: Path) -> list[str]:
    folder = _broken_logits(tmp, scale=float("nan"))
    path = config_text(tmp, lambda t: quick(t).replace(f"{bundled.DEMO_DIR.as_posix()}/base-int8", folder.as_posix()))
    return ["--config", str(path), "--results", str(tmp / "results")]


def _run_config_budget(tmp: Path) -> list[str]:
    # spent before the warm-up (whose progress lines would share stderr with the error): refused at the plan
    path = config_text(tmp, lambda t: quick(t) + '\n[run]\nbudget = "0.01s"\n')
    return ["--config", str(path), "--suite", "wallclock", "--results", str(tmp / "results")]


def _quantize_block(size: int) -> Build:
    return lambda tmp: [str(bundled.SMALL_FP32), str(tmp / "q"), "--to", "int4", "--block-size", str(size)]


def _quantize_recipe_file(text: str) -> Build:
    def build(tmp: Path) -> list[str]:
        (tmp / "recipe.toml").write_text(text, encoding="utf-8")
        return [str(bundled.SMALL_FP32), str(tmp / "q"), "--recipe", str(tmp / "recipe.toml")]

    return build


def _explore_grid(text: str) -> Build:
    def build(tmp: Path) -> list[str]:
        (tmp / "grid.toml").write_text(text, encoding="utf-8")
        out = ["--out", str(tmp / "ex"), "--results", str(tmp / "res")]
        return [str(bundled.SMALL_FP32), "--grid", str(tmp / "grid.toml"), *out]

    return build


def _no_flag(err: str) -> None:
    assert "--budget" not in err, err  # the flag was never given


def nothing_printed(tmp: Path, out: str, err: str) -> None:
    assert out == "", out[:400]


def _into_file(tmp: Path) -> list[str]:
    (tmp / "into.txt").write_text("x", encoding="utf-8")
    return [str(DATA / "record-v2.json"), "--into", str(tmp / "into.txt")]


def _results_file(tmp: Path) -> list[str]:
    (tmp / "res.txt").write_text("x", encoding="utf-8")
    return ["--config", str(config_text(tmp, quick)), "--suite", "framing", "--results", str(tmp / "res.txt")]


def _machine_folder_file(tmp: Path) -> list[str]:
    (tmp / "results").mkdir()
    (tmp / "results" / V2["machine_id"]).write_text("x", encoding="utf-8")  # this machine's id: this host's
    from measure.suites.environment import environment

    mid = environment(argv=[])["machine_id"]
    (tmp / "results" / V2["machine_id"]).rename(tmp / "results" / mid)
    return ["--config", str(config_text(tmp, quick)), "--suite", "framing", "--results", str(tmp / "results")]


def _renamed_tier_run(tmp: Path) -> list[str]:
    folder = tier_copy(tmp, {"name": "onnx-small-int4"})
    folder = folder.rename(tmp / "onnx-small-int4")
    shutil.copytree(bundled.DEMO_DIR / "small-fp32", tmp / "small-fp32")  # its quantization.from, beside it
    path = config_text(
        tmp,
        lambda t: (
            quick(t)
            .replace('name = "small-int4"', 'name = "lite-renamed"')
            .replace('drafter = "small-int4"', 'drafter = "lite-renamed"')
            .replace(f'"{bundled.DEMO_DIR.as_posix()}/small-int4"', json.dumps(str(folder)))
            .replace("warmup = 1", "warmup = 0")
        ),
    )
    return ["--config", str(path), "--results", str(tmp / "results")]


def _ab_same(tmp: Path) -> list[str]:
    path = config_text(tmp, quick)
    return [str(path), str(path), "--out", str(tmp / "results")]


def _ab_renamed_tier(tmp: Path) -> list[str]:
    base = config_text(tmp, quick)
    new = tmp / "new.toml"
    new.write_text(base.read_text(encoding="utf-8").replace('"small-int4"', '"small-int4x"'), encoding="utf-8")
    return [str(base), str(new), "--out", str(tmp / "results")]


def _golden(data: bytes | None) -> Build:
    def build(tmp: Path) -> list[str]:
        path = config_text(tmp, quick)
        (tmp / "rows.jsonl").unlink()
        if data is None:
            (tmp / "rows.jsonl").mkdir()
        else:
            (tmp / "rows.jsonl").write_bytes(data)
        return ["--config", str(path), "--results", str(tmp / "results")]

    return build


def _disk_full(tmp: Path) -> list[str]:
    return ["--config", str(config_text(tmp, quick)), "--suite", "wallclock", "--results", str(tmp / "results")]


def _broken_graph(tmp: Path) -> list[str]:
    src = tier_copy(tmp, src=bundled.SMALL_FP32)
    data = (src / "decoder-kv.onnx").read_bytes()
    (src / "decoder-kv.onnx").write_bytes(data[: len(data) // 3])
    return [str(src), str(tmp / "q"), "--to", "int8"]


def _quantize_into_file(tmp: Path) -> list[str]:
    (tmp / "q").write_text("x", encoding="utf-8")
    return [str(bundled.SMALL_FP32), str(tmp / "q"), "--to", "int8"]


def _quantize_into_link(tmp: Path) -> list[str]:
    (tmp / "outside").mkdir()
    (tmp / "q").symlink_to(tmp / "outside", target_is_directory=True)
    return [str(bundled.SMALL_FP32), str(tmp / "q"), "--to", "int8"]


def _markdown_missing(tmp: Path) -> list[str]:
    v2 = str(DATA / "record-v2.json")
    return [v2, v2, "--markdown", str(tmp / "missing" / "summary.md")]


def _hostile_strings(d: dict[str, Any]) -> None:
    d["environment"]["machine"]["cpu"] = f"<script>alert(1)</script>{ESC}"
    d["framing"]["legs"][1]["reason"] = "<img src=x onerror=alert(1)>"
    d["framing"]["legs"][0]["tiers"][0]["outputs"][0] = f"<script>x</script>{ESC}"


def _long_names(d: dict[str, Any]) -> None:
    rename_tier(d, "base-fp32", "onnx-split-fp32fp32-with-a-long-name")


def _planned(d: dict[str, Any]) -> None:
    """A budgeted run's plan on the v4 fixture: every row, every repeat, nothing cut."""
    rows, repeats = list(range(d["golden"]["rows"])), d["wallclock"]["repeats"]
    d["plan"] = {
        "budget_s": 900.0,
        "elapsed_s": 10.0,
        "minimum_s": 60.0,
        "estimate_s": 300.0,
        "shape": {
            "wallclock_rows": len(rows),
            "repeats": repeats,
            "framing_rows": len(rows),
            "prefill_rows": len(rows),
            "profile_workers": 1,
            "profile_rows": 4,
            "warm_loads": 1,
            "call_cost_rows": 12,
            "call_cost_repeats": repeats,
        },
        "wallclock_rows": rows,
        "framing_rows": rows,
        "max_repeats": repeats,
        "cut": [],
    }


def _huge_fidelity(d: dict[str, Any]) -> None:
    """Every KLD sum and golden NLL at the largest finite magnitude: the sums over rows overflow to infinity."""
    fid = d["fidelity"]
    for part in [*fid["tiers"], *fid["pairs"]]:
        part["greedy"]["kld"] = [1e308] * len(part["greedy"]["kld"])
        part["greedy"]["quantiles"] = [1e308] * len(part["greedy"].get("quantiles", []))
    for part in [*fid["tiers"], *fid["references"]]:
        part["golden_nll"] = [1e308] * len(part["golden_nll"])
    fid["tiers"][0]["golden_kld"] = 1e308


def _unscored_reference(d: dict[str, Any]) -> None:
    """A fidelity pass over no rows: every per-row array empty, so every position count sums to 0."""
    fid = d["fidelity"]
    for ref in fid["references"]:
        ref["greedy_positions"] = ref["golden_positions"] = ref["golden_nll"] = []
    for part in [*fid["tiers"], *fid["pairs"]]:
        part["greedy"].update(kld=[], same_top1=[], quantiles=[])
        part["golden_nll" if "golden_nll" in part else "positions"] = []


def fidelity_shown(tmp: Path, out: str, err: str) -> None:
    """Show's fidelity lines carry numbers: a mean of finite sums is finite, equal NLLs a PPL ratio of 1."""
    block = out[out.index("fidelity to the full-precision reference") :].split("\n\n")[0]
    lines = [line for line in block.splitlines() if line.strip().startswith(("base-int8", "small-int4"))]
    assert len(lines) == 2 and all("1.000 [1.000, 1.000]" in line for line in lines), block
    assert "nan" not in block and "inf" not in block, block


def fidelity_page(tmp: Path, out: str, err: str) -> None:
    """The render wrote the page with the fidelity section and every data file as strict JSON."""
    pages = {p.name: p.read_text(encoding="utf-8") for p in (tmp / "out").rglob("*.md")}
    assert any("fidelity-kld" in text for text in pages.values()), sorted(pages)
    for path in (tmp / "out").rglob("*.json"):
        text = path.read_text(encoding="utf-8")
        assert "NaN" not in text and "Infinity" not in text, path


def _hostile_history(tmp: Path) -> list[str]:
    """Six commits of the v2 fixture, each commit's id live markup and escape sequences, small-int4 twice as slow
    from the fourth: ``measure changes`` prints a change point between two of those ids."""
    for i in range(6):
        d = doc()
        d["run_id"] = f"{d['run_id'][:-6]}{i:06x}"
        d["started_at"] = f"2026-11-{10 + i:02d}T10:00:00Z"
        d["environment"]["git"] = {"commit": f"<b>{i}</b>{ESC}", "dirty": False}
        case = d["wallclock"]["cases"]["small-int4"]
        case["wall_s"] = [[w * (2.0 if i >= 3 else 1.0) for w in rep] for rep in case["wall_s"]]
        put(tmp, d)
    return [str(tmp / "results")]


cfg = ("config",)
CASES: dict[str, Case] = {
    # ---- the stored config is typed and bounded (validate, show, check, render, compare, calibrate)
    "config bootstrap 'lots'": Case(
        "validate",
        record("validate", setting(*cfg, "wallclock", "bootstrap", value="lots")),
        "error",
        ("config/wallclock/bootstrap",),
    ),
    "config bootstrap 0": Case(
        "show",
        record("show", setting(*cfg, "wallclock", "bootstrap", value=0)),
        "error",
        ("config/wallclock/bootstrap",),
    ),
    "config repeats 0": Case(
        "check", record("check", setting(*cfg, "wallclock", "repeats", value=0)), "error", ("config/wallclock/repeats",)
    ),
    "config seed -1": Case(
        "render", record("render", setting(*cfg, "wallclock", "seed", value=-1)), "error", ("config/wallclock/seed",)
    ),
    "config k [0]": Case(
        "validate", record("validate", setting(*cfg, "wallclock", "k", value=[0])), "error", ("config/wallclock/k/0",)
    ),
    "config warmup_s -1": Case(
        "compare",
        record("compare", setting(*cfg, "wallclock", "warmup_s", value=-1)),
        "error",
        ("config/wallclock/warmup_s",),
    ),
    "config compare_alpha 1.5": Case(
        "compare",
        record("compare", setting(*cfg, "policy", "compare_alpha", value=1.5)),
        "error",
        ("config/policy/compare_alpha",),
    ),
    "config overhead_max string": Case(
        "validate",
        record("validate", setting(*cfg, "policy", "overhead_max", value="10%")),
        "error",
        ("config/policy/overhead_max",),
    ),
    "config probe_k 0": Case(
        "show", record("show", setting(*cfg, "framing", "probe_k", value=0)), "error", ("config/framing/probe_k",)
    ),
    "config graph_optimization unknown": Case(
        "validate",
        record("validate", setting(*cfg, "session", "graph_optimization", value="fast")),
        "error",
        ("config/session/graph_optimization",),
    ),
    "config tiers not a list": Case(
        "calibrate", record("calibrate", setting(*cfg, "tiers", value=5)), "error", ("config/tiers",)
    ),
    # ---- timings are positive and finite
    "wall_s sample 0": Case(
        "show",
        record("show", lambda d: d["wallclock"]["cases"]["base-int8"]["wall_s"][0].__setitem__(0, 0)),
        "error",
        ("wallclock/cases/base-int8/wall_s/0/0",),
    ),
    "wall_s sample 1e308": Case(
        "check",
        record("check", lambda d: d["wallclock"]["cases"]["base-int8"]["wall_s"][1].__setitem__(2, 1e308)),
        "error",
        ("wallclock/cases/base-int8/wall_s/1/2",),
    ),
    "wall_s sample negative": Case(
        "compare",
        record("compare", lambda d: d["wallclock"]["cases"]["base-fp32"]["wall_s"][0].__setitem__(0, -1)),
        "error",
        ("wallclock/cases/base-fp32/wall_s",),
    ),
    "run_s sample 0": Case(
        "render",
        record("render", lambda d: d["wallclock"]["cases"]["small-int4"]["run_s"][0].__setitem__(0, 0.0)),
        "error",
        ("wallclock/cases/small-int4/run_s",),
    ),
    "verifier_run_s 0": Case(
        "validate",
        record(
            "validate",
            lambda d: d["wallclock"]["cases"]["small-int4->base-int8@k2"]["verifier_run_s"][0].__setitem__(0, 0),
        ),
        "error",
        ("verifier_run_s",),
    ),
    "NaN literal": Case("validate", raw_record("validate", b'{"schema_version": NaN}'), "error", ("line 1",)),
    "Infinity literal": Case(
        "show", raw_record("show", json.dumps(V2).replace("0.001", "Infinity", 1).encode()), "error", ("line 1",)
    ),
    "1e999 number": Case(
        "check", raw_record("check", json.dumps(V2).replace("0.001", "1e999", 1).encode()), "error", ("line 1",)
    ),
    "tokens all zero": Case(
        "show",
        record(
            "show",
            lambda d: d["wallclock"]["cases"]["base-int8"].__setitem__(
                "tokens", [0] * len(d["wallclock"]["cases"]["base-int8"]["tokens"])
            ),
        ),
        "error",
        ("wallclock/cases/base-int8/tokens",),
    ),
    "complete with repeats missing": Case(
        "check", record("check", setting("wallclock", "repeats_done", value=1)), "error", ("wallclock/repeats_done",)
    ),
    "complete with a short case": Case(
        "render",
        record("render", lambda d: d["wallclock"]["cases"]["base-fp32"]["wall_s"].pop()),
        "error",
        ("wallclock/cases/base-fp32",),
    ),
    # ---- tier identity: one name throughout
    "framing leg names an unknown tier": Case(
        "render",
        record("render", setting("framing", "legs", 0, "tiers", 0, "tier", value="onnx-base-fp32")),
        "error",
        ("framing/legs/0/tiers/0/tier", "onnx-base-fp32"),
    ),
    "node leg names an unknown tier": Case(
        "show",
        record("show", setting("framing", "legs", 1, "tiers", 2, "tier", value="my-int4")),
        "error",
        ("framing/legs/1/tiers/2/tier",),
    ),
    "wall-clock case names an unknown tier": Case(
        "check",
        record("check", setting("wallclock", "cases", "base-int8", "tier", value="other")),
        "error",
        ("wallclock/cases/base-int8/tier",),
    ),
    "speculative case names an unknown drafter": Case(
        "compare",
        record("compare", setting("wallclock", "cases", "small-int4->base-int8@k2", "drafter", value="onnx-int4")),
        "error",
        ("wallclock/cases/small-int4->base-int8@k2/drafter",),
    ),
    "greedy case keyed by another name": Case(
        "show",
        record("show", lambda d: d["wallclock"]["cases"].__setitem__("x", d["wallclock"]["cases"].pop("base-fp32"))),
        "error",
        ("wallclock/cases/x",),
    ),
    "speculative case keyed by another k": Case(
        "check",
        record("check", setting("wallclock", "cases", "small-int4->base-int8@k2", "k", value=3)),
        "error",
        ("wallclock/cases/small-int4->base-int8@k2",),
    ),
    "acceptance names an unknown verifier": Case(
        "validate",
        record("validate", setting("framing", "acceptance", 0, "verifier", value="x")),
        "error",
        ("framing/acceptance/0/verifier",),
    ),
    "config pair names an unknown tier": Case(
        "calibrate",
        record("calibrate", setting(*cfg, "pairs", 0, "drafter", value="y")),
        "error",
        ("config/pairs/0/drafter",),
    ),
    "config tier names differ from tiers": Case(
        "validate", record("validate", setting(*cfg, "tiers", 0, "name", value="z")), "error", ("config/tiers",)
    ),
    "two plain tiers": Case(
        "show", record("show", setting("tiers", "base-fp32", "role", value="plain")), "error", ("field tiers",)
    ),
    # ---- ids and placement
    "machine_id '..'": Case(
        "validate", record("validate", setting("machine_id", value=".."), machine="m"), "error", ("machine_id",)
    ),
    "machine_id '.'": Case(
        "check", record("check", setting("machine_id", value="."), machine="m"), "error", ("machine_id",)
    ),
    "machine_id with a slash": Case(
        "validate", record("validate", setting("machine_id", value="a/b"), machine="m"), "error", ("machine_id",)
    ),
    "environment machine_id '..'": Case(
        "show", record("show", setting("environment", "machine_id", value="..")), "error", ("environment/machine_id",)
    ),
    "file name is another run id": Case(
        "validate", record("validate", name="20200101T000000Z-000000.json"), "error", ("field run_id",)
    ),
    "folder is another machine": Case(
        "check", record("check", machine="some-other-machine"), "error", ("field machine_id", "some-other-machine")
    ),
    "run_id with a dot dot": Case(
        "validate", record("validate", setting("run_id", value="../../x"), name="r.json"), "error", ("run_id",)
    ),
    # ---- files that are not records
    "record not UTF-8": Case("validate", raw_record("validate", b"\xff\xfe{}"), "error", ("line 1",)),
    # ---- a results branch stores records packed and gzipped (<run-id>.json.gz)
    "truncated .json.gz": Case(
        "validate",
        raw_record("validate", gzip.compress(json.dumps(V2).encode())[:900], ".json.gz"),
        "error",
        (".json.gz",),
    ),
    "truncated .json.gz in a tree": Case(
        "check", raw_record("check", gzip.compress(json.dumps(V2).encode())[:900], ".json.gz"), "error", (".json.gz",)
    ),
    ".json.gz that is not gzip": Case(
        "show", raw_record("show", json.dumps(V2).encode(), ".json.gz"), "error", (".json.gz", "gzip")
    ),
    "packed seconds not whole": Case(
        "validate",
        record(
            "validate",
            setting("wallclock", "cases", next(iter(V2["wallclock"]["cases"])), "wall_s", value={"ns": [[0.5]]}),
        ),
        "error",
        (".json", "field wall_s", "whole nanoseconds"),
    ),
    "record empty": Case("show", raw_record("show", b""), "error", ("not valid JSON",)),
    "record a JSON array": Case("validate", raw_record("validate", b"[]"), "error", ("expected a JSON object",)),
    "record from a newer measure": Case(
        "render", record("render", setting("schema_version", value=99)), "error", ("schema_version 99",)
    ),
    "record is a folder": Case(
        "validate", lambda tmp: [str((tmp / "r.json").mkdir() or tmp / "r.json")], "error", ("r.json",)
    ),
    # ---- what reaches a terminal or a page is inert
    "escape sequences in show": Case("show", record("show", _hostile_strings), "inert", check=no_raw_control),
    "escape sequences in validate": Case(
        "validate",
        record("validate", setting("complete", value=False), setting("error", value=f"boom{ESC}\nsecond line")),
        "inert",
        check=no_raw_control,
    ),
    "plan shape without repeats": Case(
        "show",
        record("show", _planned, lambda d: d["plan"]["shape"].pop("repeats"), base=doc4),
        "error",
        ("plan/shape", "'repeats' is a required property"),
    ),
    "plan shape with a key that is no count": Case(
        "check",
        record("check", _planned, setting("plan", "shape", "note", value="y"), base=doc4),
        "error",
        ("plan/shape", "'note' was unexpected"),
    ),
    "cpu_s repeat of no rows": Case(
        "show",
        record("show", setting("wallclock", "cases", "base-int8", "cpu_s", 0, value=[]), base=doc4),
        "error",
        ("wallclock/cases/base-int8/cpu_s", "seconds per repeat"),
    ),
    "run_s a repeat short of wall_s": Case(
        "render",
        record("render", lambda d: d["wallclock"]["cases"]["small-int4"]["run_s"].pop(), base=doc4),
        "error",
        ("wallclock/cases/small-int4/run_s", "one list per repeat of wall_s (3)"),
    ),
    "speculative case accepting more than it proposed": Case(
        "render",
        record("render", setting("wallclock", "cases", "small-int4->base-int8@k4", "proposed", 0, value=0), base=doc4),
        "error",
        ("wallclock/cases/small-int4->base-int8@k4/accepted", "at most proposed"),
    ),
    "framing pair accepting more than it proposed": Case(
        "show",
        record("show", lambda d: d["framing"]["acceptance"][0]["runtime"].update(accepted=10**6), base=doc4),
        "error",
        ("framing/acceptance/0/runtime", "accepted <= proposed"),
    ),
    "MatMulNBits bits a list": Case(
        "check",
        record("check", setting("tiers", "small-int4", "fingerprint", "graphs", 0, "nbits", "bits", value=[])),
        "error",
        ("tiers/small-int4/fingerprint/graphs/0/nbits/bits",),
    ),
    "fidelity tier judged against a reference it lacks": Case(
        "render",
        record("render", setting("fidelity", "tiers", 0, "reference", value="base-fp16"), base=doc4),
        "error",
        ("fidelity/tiers/0/reference", "'base-fp16'", "base-fp32"),
    ),
    "fidelity reference with a row of no positions": Case(
        "render",
        record("render", setting("fidelity", "references", 0, "golden_positions", 3, value=0), base=doc4),
        "error",
        ("fidelity/references/0/golden_positions/3",),
    ),
    "fidelity pass over no rows renders": Case(
        "render", record("render", _unscored_reference, base=doc4), "inert", check=fidelity_page
    ),
    "fidelity KLD sums and golden NLLs of 1e308 render": Case(
        "render", record("render", _huge_fidelity, base=doc4), "inert", check=fidelity_page
    ),
    "fidelity KLD sums and golden NLLs of 1e308 in show": Case(
        "show", record("show", _huge_fidelity, base=doc4), "inert", check=fidelity_shown
    ),
    "markup and escapes render inert": Case(
        "render", record("render", _hostile_strings), "inert", check=rendered_inert
    ),
    "long tier names keep show's columns apart": Case(
        "show", record("show", _long_names), "inert", check=columns_apart
    ),
    # ---- archive
    "archive a missing tree": Case("archive", lambda tmp: [str(tmp / "nope")], "error", ("nope", "no such folder")),
    "archive keeping -1 runs": Case(
        "archive", lambda tmp: [str(tmp), "--keep", "-1"], "error", ("--keep", "0 or more")
    ),
    "archive past a truncated archive": Case(
        "archive", _broken_archive, "error", ("2026-01.archive.json.gz", "not a readable month archive", "truncated")
    ),
    "archive a month holding a record that is not UTF-8": Case(
        "archive",
        _archive_not_utf8,
        "error",
        ("20261101T000000Z-badbad.json", "not UTF-8 text", "nothing archived"),
        check=lambda tmp, out, err: _nothing_archived(tmp, 2),
    ),
    "fidelity of two model kinds": Case(
        "fidelity",
        lambda tmp: [str(bundled.DEMO_DIR / "lm-base-fp32"), str(bundled.DEMO_DIR / "base-int8"), "--rows", "2"],
        "error",
        ("base-int8", "lm-base-fp32", "one model kind"),
    ),
    "fidelity against a missing folder": Case(
        "fidelity", lambda tmp: [str(tmp / "nope"), str(bundled.DEMO_DIR / "base-int8")], "error", ("nope",)
    ),
    "fidelity over a row without an output": Case(
        "fidelity", _fidelity_no_output, "error", ("rows.jsonl:1", "field 'output'")
    ),
    "fidelity over an output longer than a seq2seq tier's target positions": Case(
        "fidelity",
        _fidelity_long_output("base-fp32", "base-int8", 72),
        "error",
        ("rows.jsonl:2", "72 tokens", "base-fp32", "at most 63", "tier.json: field max_target_tokens: 64 positions"),
    ),
    "fidelity over an output longer than a decoder-only tier's positions": Case(
        "fidelity",
        _fidelity_long_output("lm-base-fp32", "lm-base-int8", 130),
        "error",
        ("rows.jsonl:2", "130 tokens", "lm-base-fp32", "config.json: field max_position_embeddings: 128 positions"),
    ),
    "fidelity --json of a tier whose logits are NaN": Case(
        "fidelity",
        _fidelity_broken(scale=float("nan")),
        "error",
        ("tier onnx-x", "logits are NaN at row 1", "golden-v1.jsonl:1"),
        check=nothing_printed,
    ),
    "fidelity --json of a tier whose logits are infinite": Case(
        "fidelity",
        _fidelity_broken(bias={5: float("inf")}),
        "error",
        ("tier onnx-x", "logits are infinite at row 1"),
        check=nothing_printed,
    ),
    # ---- containment: merge
    "merge into a file": Case("merge", _into_file, "error", ("into.txt", "not a folder")),
    "merge past a corrupt target": Case(
        "merge",
        _merge(lambda d: d, _with(setting("run_id", value="20261202T215710Z-aaaaaa")), into=_corrupt_target),
        "contained",
        check=merged(1, 0, 1),
        codes=(1,),
    ),
    "merge one record under two names": Case(
        "merge", _merge(lambda d: d, lambda d: d), "contained", check=merged(1, 1, 0), codes=(0,)
    ),
    "merge a '..' machine id": Case(
        "merge", _merge(_with(setting("machine_id", value=".."))), "contained", check=merged(0, 0, 1), codes=(1,)
    ),
    "merge through a dangling symlink": Case(
        "merge",
        _merge(lambda d: d, into=_dangling_target),
        "contained",
        check=absent("outside/written.json"),
        codes=(1,),
    ),
    "merge into a machine folder linked outside": Case(
        "merge",
        _merge(lambda d: d, into=_machine_link_outside),
        "error",
        ("outside", "refusing"),
    ),
    "merge a file that is not UTF-8": Case(
        "merge", _merge(b"\xff\xfe\x00", lambda d: d), "contained", check=merged(1, 0, 1), codes=(1,)
    ),
    # ---- containment: calibrate, changes, render, run, compare
    "calibrate a missing tree": Case("calibrate", lambda tmp: [str(tmp / "nope")], "error", ("nope",)),
    "changes in a missing tree": Case("changes", lambda tmp: [str(tmp / "nope")], "error", ("nope",)),
    "changes in a tree holding a record that is not JSON": Case(
        "changes",
        lambda tmp: [*raw_record("changes", b"{not json")(tmp)[:0], str(tmp / "results")],
        "error",
        (f"{V2['run_id']}.json",),
    ),
    "changes between commits named with escape sequences": Case(
        "changes", _hostile_history, "inert", check=no_raw_control
    ),
    "calibrate writes through a symlinked calibration.json": Case(
        "calibrate",
        _cal_symlink,
        "error",
        ("calibration.json", "symbolic link"),
    ),
    "calibrate writes into a machine folder linked outside": Case(
        "calibrate",
        _cal_folder_symlink,
        "error",
        ("calibration.json", "outside"),
    ),
    "render a missing results tree": Case(
        "render",
        lambda tmp: ["--results", str(tmp / "typo"), "--out", str(tmp / "out")],
        "error",
        ("typo", "no such folder"),
    ),
    "render --out a file": Case(
        "render",
        lambda tmp: [*record("render")(tmp)[:2], "--out", str((tmp / "o.md").write_text("x") and tmp / "o.md")],
        "error",
        ("o.md", "not a folder"),
    ),
    "check a missing results tree": Case("check", lambda tmp: ["--results", str(tmp / "typo")], "error", ("typo",)),
    "compare --markdown into a missing folder": Case(
        "compare", _markdown_missing, "error", ("summary.md", "No such file or directory")
    ),
    "compare a missing record": Case(
        "compare", lambda tmp: [str(tmp / "a.json"), str(DATA / "record-v2.json")], "error", ("a.json",)
    ),
    "ab with a tier only NEW has": Case("ab", _ab_renamed_tier, "error", ("new.toml", "'small-int4x'", "suite.toml")),
    "ab --rows 0": Case("ab", lambda tmp: [*_ab_same(tmp), "--rows", "0"], "error", ("--rows 0",)),
    "ab --repeats 1": Case("ab", lambda tmp: [*_ab_same(tmp), "--repeats", "1"], "error", ("--repeats 1",)),
    "run --results is a file": Case("run", _results_file, "error", ("res.txt",)),
    "run where the machine folder is a file": Case("run", _machine_folder_file, "error", ("a file is in the way",)),
    # ---- the suite config
    "config not UTF-8": Case(
        "run",
        lambda tmp: ["--config", str((tmp / "c.toml").write_bytes(b'golden = "\xff"') and tmp / "c.toml")],
        "error",
        ("c.toml", "UTF-8"),
    ),
    "config golden = 5": Case(
        "run", run_config(replace('golden = "rows.jsonl"', "golden = 5")), "error", ("suite.toml", "golden")
    ),
    "config repeats = 0": Case(
        "run", run_config(replace("repeats = 1", "repeats = 0")), "error", ("suite.toml", "wallclock.repeats")
    ),
    "config bootstrap = 'lots'": Case(
        "run",
        run_config(replace("bootstrap = 400", 'bootstrap = "lots"')),
        "error",
        ("suite.toml", "wallclock.bootstrap"),
    ),
    "config bootstrap = 1": Case(
        "run", run_config(replace("bootstrap = 400", "bootstrap = 1")), "error", ("suite.toml", "wallclock.bootstrap")
    ),
    "config seed = -1": Case(
        "run",
        run_config(replace("bootstrap = 400", "bootstrap = 400\nseed = -1")),
        "error",
        ("suite.toml", "wallclock.seed"),
    ),
    "config k = [0]": Case(
        "run",
        run_config(replace("[framing]\nk = [2, 4]", "[framing]\nk = [0]")),
        "error",
        ("suite.toml", "framing.k.0"),
    ),
    "config tiers = 5": Case(
        "run", run_config(lambda t: "tiers = 5\n" + t.split("[[tiers]]")[0]), "error", ("suite.toml", "tiers")
    ),
    "config compare_alpha = 2": Case(
        "run", run_config(append("\n[policy]\ncompare_alpha = 2.0\n")), "error", ("suite.toml", "policy.compare_alpha")
    ),
    "config names a provider this onnxruntime lacks": Case(
        "run",
        run_config(append('\n[session]\nproviders = ["NoSuchExecutionProvider"]\n')),
        "error",
        ("suite.toml", "session.providers", "NoSuchExecutionProvider", "not available"),
    ),
    "config graph_optimization = 'max'": Case(
        "run",
        run_config(append('\n[session]\ngraph_optimization = "max"\n')),
        "error",
        ("suite.toml", "session.graph_optimization", "'max'"),
    ),
    "config intra_op_threads = -1": Case(
        "run",
        run_config(append("\n[session]\nintra_op_threads = -1\n")),
        "error",
        ("suite.toml", "session.intra_op_threads"),
    ),
    "config profile_workers = 0": Case(
        "run",
        run_config(replace("profile_workers = 1", "profile_workers = 0")),
        "error",
        ("suite.toml", "wallclock.profile_workers"),
    ),
    "config names a valgrind that is not there": Case(
        "run",
        run_config(append('\n[instructions]\nenabled = true\nvalgrind = "no-such-valgrind"\n')),
        "error",
        ("suite.toml", "instructions.valgrind", "no-such-valgrind"),
    ),
    "config pairs tiers of two vocabularies": Case(
        "run", _pair_of_two_vocabularies, "error", ("suite.toml", "pairs[0]", "small-int4->base-int8", "vocabulary")
    ),
    "render --reference-machine that has no record": Case(
        "render",
        lambda tmp: [*record("render")(tmp)[:2], "--out", str(tmp / "out"), "--reference-machine", "nope"],
        "error",
        ("--reference-machine nope", "no complete record", V2["machine_id"]),
    ),
    "golden rows not UTF-8": Case(
        "run", _golden(b'{"input": "\xff", "output": "x"}\n'), "error", ("rows.jsonl", "UTF-8")
    ),
    "golden row not JSON": Case(
        "run", _golden(b'{"input": "a", "output": "b"}\n{oops\n'), "error", ("rows.jsonl", "2")
    ),
    "golden rows a folder": Case("run", _golden(None), "error", ("rows.jsonl",)),
    "config missing": Case("run", lambda tmp: ["--config", str(tmp / "none.toml")], "error", ("none.toml",)),
    "config tier model not a name": Case(
        "run",
        run_config(replace('role = "plain"', 'role = "plain"\nmodel = ["base"]')),
        "error",
        ("suite.toml", "tiers[1].model", "expected the name of the model"),
    ),
    "config tier name differs from tier.json's": Case(
        "run", _renamed_tier_run, "contained", check=record_consistent, codes=(0,)
    ),
    "run over an output longer than a tier's target positions": Case(
        "run",
        _run_long_output,
        "error",
        ("rows.jsonl:2", "72 tokens", "max_target_tokens", "nothing was measured"),
        check=absent("results"),
    ),
    "run with a tier whose logits are NaN": Case(
        "run",
        _run_nan_tier,
        "error",
        ("tier base-int8", "logits are NaN at row 1", "rows.jsonl:1", "first decode step"),
        check=absent("results"),
    ),
    "run with a [run] budget too small": Case(
        "run",
        _run_config_budget,
        "error",
        ('suite.toml: [run] budget = "0.01s": too small', "nothing was measured"),
        check=lambda tmp, out, err: (absent("results")(tmp, out, err), _no_flag(err)),
    ),
    # the first save (each tier's fingerprint and bytes per step, about 6.2 kB) fits, the first case pass does not
    "disk fills up during a run": Case(
        "run", _disk_full, "error", ("cannot write", "File too large"), fsize=6600, check=kept_last_record
    ),
    # ---- decoding arguments and tier metadata
    "decode --max-new-tokens 0": Case(
        "decode", decoding(extra=("--max-new-tokens", "0")), "error", ("--max-new-tokens",)
    ),
    "decode --max-new-tokens -5": Case(
        "decode", decoding(extra=("--max-new-tokens", "-5")), "error", ("--max-new-tokens",)
    ),
    "decode --k 0": Case(
        "decode",
        lambda tmp: [str(bundled.PLAIN), "привет", "--draft", str(bundled.LITE), "--k", "0"],
        "error",
        ("--k",),
    ),
    "eos_token_id 1e9": Case("decode", decoding({"eos_token_id": 1e9}), "error", ("tier.json", "eos_token_id")),
    "eos_token_id 10**9": Case("decode", decoding({"eos_token_id": 10**9}), "error", ("tier.json", "eos_token_id")),
    "pad_token_id -1": Case(
        "info", lambda tmp: [str(tier_copy(tmp, {"pad_token_id": -1}))], "error", ("tier.json", "pad_token_id")
    ),
    "decoder_start_token_id a string": Case(
        "decode", decoding({"decoder_start_token_id": "0"}), "error", ("tier.json", "decoder_start_token_id")
    ),
    "tier.json not UTF-8": Case("decode", decoding(raw=b'{"name": "\xff"}'), "error", ("tier.json", "UTF-8")),
    "tier.json not JSON": Case("info", lambda tmp: [str(tier_copy(tmp, raw=b"{,"))], "error", ("tier.json", "line 1")),
    "tokenizer outside the tier folder": Case(
        "decode", decoding({"tokenizer": "../../tokenizer.json"}), "error", ("tier.json", "tokenizer", "outside")
    ),
    "tokenizer not a string": Case(
        "info", lambda tmp: [str(tier_copy(tmp, {"tokenizer": 5}))], "error", ("tier.json", "tokenizer")
    ),
    "decode stdin not UTF-8": Case(
        "decode", lambda tmp: [str(bundled.LITE)], "error", ("<stdin>", "line 2"), stdin="привет\n".encode() + b"\xff\n"
    ),
    "decode a tier that is a file": Case(
        "decode", lambda tmp: [str((tmp / "t").write_text("x") and tmp / "t"), "a"], "error", ("not a folder",)
    ),
    "info a tier named with escape sequences": Case(
        "info", lambda tmp: [str(tier_copy(tmp, {"name": f"x{ESC}"}))], "inert", check=no_raw_control
    ),
    "info a missing tier": Case("info", lambda tmp: [str(tmp / "gone")], "error", ("gone",)),
    "instructions with no rows": Case(
        "instructions", lambda tmp: [str(bundled.DEMO_DIR / "base-int8"), "--rows", "0"], "error", ("--rows",)
    ),
    "instructions with missing golden rows": Case(
        "instructions",
        lambda tmp: [str(bundled.DEMO_DIR / "base-int8"), "--golden", str(tmp / "none.jsonl")],
        "error",
        ("none.jsonl",),
    ),
    "init a missing tier folder": Case("init", lambda tmp: [str(tmp / "gone")], "error", ("gone",)),
    "init a folder without graphs": Case(
        "init", lambda tmp: [str((tmp / "empty").mkdir() or tmp / "empty")], "error", ("empty", "missing model graphs")
    ),
    "init with non-UTF-8 golden rows": Case(
        "init",
        lambda tmp: [
            str(shutil.copytree(bundled.DEMO_DIR / "small-fp32-optimum", tmp / "tier")),
            "--golden",
            str((tmp / "rows.jsonl").write_bytes(b"\xff\xfe") and tmp / "rows.jsonl"),
        ],
        "error",
        ("rows.jsonl", "UTF-8"),
    ),
    # ---- quantize
    "quantize into a file": Case("quantize", _quantize_into_file, "error", ("is a file",)),
    "quantize into a symlink": Case("quantize", _quantize_into_link, "error", ("symbolic link",)),
    "quantize --block-size 2**40": Case(
        "quantize", _quantize_block(2**40), "error", ("--block-size", "16 to 256", "1099511627776"), check=absent("q")
    ),
    "quantize --block-size 512": Case("quantize", _quantize_block(512), "error", ("--block-size", "got 512")),
    "quantize --recipe an unknown name": Case(
        "quantize",
        lambda tmp: [str(bundled.SMALL_FP32), str(tmp / "q"), "--recipe", "int2"],
        "error",
        ("--recipe", "no recipe named 'int2'"),
        check=absent("q"),
    ),
    "quantize recipe file with an unknown key": Case(
        "quantize",
        _quantize_recipe_file('base = "int4"\nper_chanel = true\n'),
        "error",
        ("recipe.toml", "key per_chanel", "unknown"),
        check=absent("q"),
    ),
    "quantize recipe file block size 512": Case(
        "quantize",
        _quantize_recipe_file('method = "matmul-nbits"\nbits = 4\nblock_size = 512\n'),
        "error",
        ("recipe.toml", "key block_size", "got 512"),
        check=absent("q"),
    ),
    "quantize recipe file 3 bits": Case(
        "quantize",
        _quantize_recipe_file('method = "matmul-nbits"\nbits = 3\n'),
        "error",
        ("recipe.toml", "key bits", "got 3"),
        check=absent("q"),
    ),
    "quantize recipe file not TOML": Case(
        "quantize", _quantize_recipe_file("[keep\n"), "error", ("recipe.toml", "not valid TOML"), check=absent("q")
    ),
    "quantize recipe keeping a misspelt node": Case(
        "quantize",
        _quantize_recipe_file('base = "int8"\n[keep]\nnodes = ["/head/Matmul"]\n'),
        "error",
        ("keep.nodes", "/head/Matmul", "names no weight MatMul"),
        check=absent("q"),
    ),
    "quantize a source that is not full precision": Case(
        "quantize",
        lambda tmp: [str(bundled.DEMO_DIR / "small-int8"), str(tmp / "q"), "--recipe", "int8-nbits"],
        "error",
        ("small-int8", "int8-dynamic, not full precision"),
        check=absent("q"),
    ),
    # ---- explore
    "explore a reference that is not full precision": Case(
        "explore",
        lambda tmp: [str(bundled.DEMO_DIR / "small-int8"), "--out", str(tmp / "ex"), "--results", str(tmp / "res")],
        "error",
        ("small-int8", "not full precision"),
        check=absent("ex", "res"),
    ),
    "explore a grid with an unknown key": Case(
        "explore",
        _explore_grid('[[recipes]]\nname = "a"\nbase = "int8"\nper_chanel = true\n'),
        "error",
        ("grid.toml", "recipes[0]", "key per_chanel"),
        check=absent("ex", "res"),
    ),
    "explore a grid with block size 512": Case(
        "explore",
        _explore_grid('[[recipes]]\nname = "a"\nmethod = "matmul-nbits"\nbits = 4\nblock_size = 512\n'),
        "error",
        ("grid.toml", "key block_size", "got 512"),
        check=absent("ex", "res"),
    ),
    "explore --screen-rows 0": Case(
        "explore",
        lambda tmp: [str(bundled.SMALL_FP32), "--screen-rows", "0", "--out", str(tmp / "ex")],
        "error",
        ("--screen-rows", "got 0"),
        check=absent("ex"),
    ),
    "explore --baseline an unknown recipe": Case(
        "explore",
        lambda tmp: [
            str(bundled.SMALL_FP32),
            "--baseline",
            "int9",
            "--out",
            str(tmp / "ex"),
            "--results",
            str(tmp / "res"),
        ],
        "error",
        ("--baseline", "no recipe named 'int9'"),
        check=absent("ex", "res"),
    ),
    "explore --baseline a static recipe without calibration rows": Case(
        "explore",
        lambda tmp: [
            str(bundled.SMALL_FP32),
            "--baseline",
            "int8-static",
            "--out",
            str(tmp / "ex"),
            "--results",
            str(tmp / "res"),
        ],
        "error",
        ("int8-static", "--calibration"),
        check=absent("ex", "res"),
    ),
    # ---- locate
    "locate a reference that is not full precision": Case(
        "locate",
        lambda tmp: [str(bundled.DEMO_DIR / "small-int8"), "--recipe", "int8"],
        "error",
        ("small-int8", "not full precision"),
    ),
    "locate by an unknown recipe": Case(
        "locate",
        lambda tmp: [str(bundled.SMALL_FP32), "--recipe", "int9"],
        "error",
        ("int9",),
    ),
    "locate a recipe file with block size 512": Case(
        "locate",
        lambda tmp: (
            (tmp / "r.toml").write_text('method = "matmul-nbits"\nbits = 4\nblock_size = 512\n'),
            [str(bundled.SMALL_FP32), "--recipe", str(tmp / "r.toml")],
        )[1],
        "error",
        ("r.toml", "block_size", "512"),
    ),
    "locate --rows 0": Case(
        "locate",
        lambda tmp: [str(bundled.SMALL_FP32), "--recipe", "int8", "--rows", "0"],
        "error",
        ("--rows 0", "expected 1 to 10000"),
    ),
    "quantize a broken graph leaves nothing": Case(
        "quantize", _broken_graph, "error", ("decoder-kv.onnx",), check=no_partial
    ),
    # ---- env
    "env outside any checkout": Case(
        "env", lambda tmp: [], "contained", check=machine_id_is_a_plain_folder_name, target="."
    ),
}


def _params() -> list[Any]:
    return [pytest.param(case, id=name) for name, case in CASES.items()]


def _snapshot(tmp: Path, target: str) -> dict[str, bytes]:
    skip = (tmp / target).resolve()
    found = {}
    for path in tmp.rglob("*"):
        if path.is_file() and not path.is_symlink() and skip not in path.resolve().parents and target != ".":
            found[str(path.relative_to(tmp))] = path.read_bytes()
    return found


def _invoke(case: Case, argv: list[str], tmp: Path, capsys) -> tuple[int, str, str]:
    if case.stdin is None and case.fsize is None:
        capsys.readouterr()
        code = main([case.verb, *argv])
        out, err = capsys.readouterr()
        return code, out, err

    def limit() -> None:
        if case.fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (case.fsize, case.fsize))

    done = subprocess.run(
        [sys.executable, "-m", "measure", case.verb, *argv],
        input=case.stdin or b"",
        capture_output=True,
        cwd=tmp,
        env=dict(os.environ, CI="1", **case.env),
        preexec_fn=limit,
        timeout=120,
    )
    err = done.stderr.decode("utf-8", "replace")
    err = "\n".join(line for line in err.splitlines() if not line.startswith("[")) + ("\n" if err else "")  # progress
    return done.returncode, done.stdout.decode("utf-8", "replace"), err


@pytest.mark.parametrize("case", _params())
def test_hostile_input(case: Case, tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CI", "1")  # plain progress lines, no terminal bar
    argv = case.build(tmp_path)
    before = _snapshot(tmp_path, case.target)
    code, out, err = _invoke(case, argv, tmp_path, capsys)
    assert "Traceback" not in err + out
    if case.expect == "error":
        lines = err.splitlines()
        assert code == 2, (code, out, err)
        assert len(lines) == 1, err
        assert lines[0].startswith(f"measure {case.verb}: error: "), lines[0]
        for name in case.names:
            assert name in lines[0], (name, lines[0])
    else:
        assert code in case.codes, (code, out, err)
        if code == 2:
            assert len(err.splitlines()) == 1, err
    after = _snapshot(tmp_path, case.target)
    if case.expect == "contained" or case.expect == "error":
        created = set(after) - set(before)
        assert not created, f"written outside {case.target}: {sorted(created)}"
    if case.check is not None:
        case.check(tmp_path, out, err)


def test_the_corpus_covers_every_verb_with_sixty_cases():
    from measure.cli import VERBS

    assert len(CASES) >= 60
    assert {c.verb for c in CASES.values()} == set(VERBS)
