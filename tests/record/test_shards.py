"""measure explore --shard and measure merge --shards: a split search's records joined into one, honestly.

Two real shards of a tiny search (one demo reference, a two-recipe grid, the int8 baseline in each) are made
once for the module; every refusal is built by editing one shard's record, never hoped for from a machine.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from measure import bundled
from measure.analysis.stats import paired_ratio
from measure.analysis.timings import common_repeats, tier_timings
from measure.cli import main
from measure.errors import MeasureError
from measure.record.io import load_record, validate, write_record
from measure.record.model.read import from_document
from measure.record.shards import join, join_files, load_shards
from measure.tools.candidates import Candidate, deal, parse_shard
from measure.tools.recipes import NAMED

LM = bundled.CONFIG.parent / "lm-small-fp32"


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Shard 1 and 2 of {int8 (baseline), int4, int8-per-channel} on lm-small-fp32: one recipe and the baseline
    each, under a small budget."""
    tmp = tmp_path_factory.mktemp("shards")
    grid = tmp / "grid.toml"
    grid.write_text('[[recipes]]\nname = "int4"\n[[recipes]]\nname = "int8-per-channel"\n')
    paths = []
    for i in (1, 2):
        args = [str(LM), "--grid", str(grid), "--out", str(tmp / "ex"), "--results", str(tmp / f"r{i}")]
        assert main(["explore", *args, "--budget", "30s", "--screen-rows", "4", "--shard", f"{i}/2"]) == 0
        (path,) = (tmp / f"r{i}").glob("*/*.json")
        paths.append(path)
    return paths


def _candidates(refs: int, recipes: int) -> list[Candidate]:
    names = ["int8", *[n for n in NAMED if n != "int8"][: recipes - 1]]
    return [
        Candidate(f"ref{r}", NAMED[n], f"ref{r}-{n}", Path("."), baseline=n == "int8")
        for r in range(refs)
        for n in names
    ]


@pytest.mark.parametrize("count", [1, 2, 3, 7, 20])
def test_the_deal_gives_every_candidate_to_one_shard_and_the_baseline_to_each(count):
    candidates = _candidates(2, 6)
    dealt = [deal(candidates, i, count) for i in range(1, count + 1)]
    rest = [c.tier for share in dealt for c in share if not c.baseline]
    assert sorted(rest) == sorted(c.tier for c in candidates if not c.baseline)  # each exactly once
    for share in dealt:
        assert [c.tier for c in share if c.baseline] == ["ref0-int8", "ref1-int8"]
    assert [c.tier for c in deal(candidates, count, count)] == [c.tier for c in dealt[-1]]  # deterministic


@pytest.mark.parametrize("value", ["0/2", "3/2", "2", "a/b", "1/0", "-1/2", ""])
def test_a_bad_shard_is_one_line(value, capsys):
    with pytest.raises(MeasureError, match="explore --shard: expected INDEX/COUNT"):
        parse_shard(value)
    assert main(["explore", str(LM), f"--shard={value}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("measure explore: error: explore --shard: expected INDEX/COUNT")


def test_each_shard_says_which_of_how_many_of_which_grid(shards):
    docs = [load_record(p) for p in shards]
    assert [d["explore"]["shard"]["index"] for d in docs] == [1, 2]
    assert {d["explore"]["shard"]["count"] for d in docs} == {2}
    assert len({d["explore"]["shard"]["grid_sha256"] for d in docs}) == 1
    recipes = [sorted(c["recipe"]["name"] for c in d["explore"]["candidates"]) for d in docs]
    assert recipes == [["int4", "int8"], ["int8", "int8-per-channel"]]


def test_merge_joins_the_shards_into_one_record_paired_within_each_shard(shards, tmp_path):
    assert main(["merge", "--shards", *map(str, shards), "--into", str(tmp_path / "res")]) == 0
    (path,) = (tmp_path / "res").glob("*/*.json")
    assert main(["validate", str(path)]) == 0
    doc = load_record(path)
    record = from_document(doc, str(path))
    ex = record.explore
    assert ex is not None and ex.shard is None and ex.joined is not None
    assert ex.joined.runs == tuple(load_record(p)["run_id"] for p in shards)
    assert sorted(c.recipe_name for c in ex.candidates) == ["int4", "int8", "int8-per-channel"]
    assert ex.joined.anchors == {"lm-small-int8-per-channel": "lm-small-int8.shard2"}
    assert record.plain == "lm-small-int8" and record.tiers["lm-small-int8.shard2"].role == "verifier"
    assert {t.tier for t in record.fidelity.tiers} == {"lm-small-int8", "lm-small-int4", "lm-small-int8-per-channel"}
    timings = {t.tier: t for t in tier_timings(record)}
    cases = record.wallclock.cases
    for tier, anchor in (("lm-small-int4", "lm-small-int8"), ("lm-small-int8-per-channel", "lm-small-int8.shard2")):
        a, b = cases[tier].per_repeat_ms_per_token, cases[anchor].per_repeat_ms_per_token
        assert timings[tier].ratio_vs_plain == paired_ratio(*common_repeats(a, b))
    assert timings["lm-small-int8.shard2"].ratio_vs_plain is None  # nothing ran beside it on shard 1
    rows = doc["plan"]["wallclock_rows"]
    own = [load_record(p)["plan"]["wallclock_rows"] for p in shards]
    assert rows == [r for r in own[0] if r in own[1]] and all(len(c.tokens) == len(rows) for c in cases.values())
    assert main(["render", "--results", str(tmp_path / "res"), "--out", str(tmp_path / "md")]) == 0
    text = (tmp_path / "md" / "wallclock.md").read_text()
    assert "lm-small-int8-per-channel" in text and "lm-small-int4" in text


def _edited(shards: list[Path], tmp: Path, edit) -> list[Path]:
    """The shards with shard 2's record edited (and rewritten where its name still matches its content)."""
    doc = load_record(shards[1])
    edit(doc)
    out = tmp / "edited" / "shard2.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_record(out, doc)
    return [shards[0], out]


@pytest.mark.parametrize(
    ("edit", "names"),
    [
        (lambda d: d["explore"]["shard"].update(grid_sha256="0" * 64), "explore/shard/grid_sha256"),
        (lambda d: d.update(machine_id="linux-x86_64-4c-00000000"), "machine_id: machine id"),
        (lambda d: d["tool"].update(version="0.0.1"), "tool/version: measure version"),
        (lambda d: d["explore"]["shard"].update(index=1), "shard 1 again"),
        (lambda d: d["explore"].pop("shard"), "explore/shard: missing"),
        (lambda d: d["explore"]["shard"].update(count=3, index=3), "shard count"),
    ],
)
def test_merge_refuses_shards_that_are_not_one_search(shards, tmp_path, capsys, edit, names):
    files = _edited(shards, tmp_path, edit)
    with pytest.raises(MeasureError, match=names):
        join_files(files)
    assert main(["merge", "--shards", *map(str, files), "--into", str(tmp_path / "res")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("measure merge: error: ") and names in line
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").rglob("*.json"))


def test_merge_refuses_a_missing_shard(shards):
    with pytest.raises(MeasureError, match=r"shard\(s\) 2 of 2 missing"):
        load_shards([shards[0]])


def test_validate_refuses_an_inconsistent_shard_section(shards):
    doc = load_record(shards[0])
    doc["explore"]["shard"].update(index=3, count=2)
    with pytest.raises(MeasureError, match="explore/shard/index: shard 3 of 2"):
        validate(doc, "x.json")
    joined = join(load_shards(shards))
    both = json.loads(json.dumps(joined)) | {}
    both["explore"]["shard"] = {"index": 1, "count": 2, "grid_sha256": joined["explore"]["joined"]["grid_sha256"]}
    with pytest.raises(MeasureError, match="explore/joined: a record is a shard or a join"):
        validate(both, "x.json")
    short = json.loads(json.dumps(joined))
    short["explore"]["joined"]["runs"] = short["explore"]["joined"]["runs"][:1]
    with pytest.raises(MeasureError, match="explore/joined/runs"):
        validate(short, "x.json")
    lost = json.loads(json.dumps(joined))
    lost["explore"]["joined"]["anchors"]["lm-small-int4"] = "nowhere"
    with pytest.raises(MeasureError, match="tier 'nowhere' is not in tiers"):
        validate(lost, "x.json")
