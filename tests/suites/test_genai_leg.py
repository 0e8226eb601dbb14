"""The onnxruntime-genai leg in the framing suite, the record and the pages: a tiny real run of demo tiers.

Two fp32 optimum tiers (a pair) and the fp32 genai folder, 8 golden rows, plus one seq2seq tier the leg skips.
What is asserted of decodes holds by construction (fp32: the same graph and kernels under both loops); ratios
and times are only checked against the record's own samples, never for a value.
"""

from __future__ import annotations

import html as html_module
import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path
from statistics import median

import pytest
from tests_support import CHROMIUM_ARGS, ROOT, build, html, site_project

from measure import bundled
from measure.cli import main
from measure.record.io import load_record, validate
from measure.record.model import from_document
from measure.record.model.framing import Framing
from measure.record.model.genai import SEQ2SEQ_SKIP, GenaiPair, GenaiTier

DEMO = bundled.CONFIG.parent
ROWS = 8
CHROMIUM = "/usr/bin/chromium"
SHOTS = Path("/work/tools/shots")

needs_og = pytest.mark.skipif(
    importlib.util.find_spec("onnxruntime_genai") is None, reason="onnxruntime-genai is not installed (the genai extra)"
)

TIERS = [
    ("genai-base-fp32", "plain"),
    ("lm-base-fp32", "verifier"),
    ("lm-small-fp32", "drafter"),
    ("small-fp32", "lite"),
]


def _config(folder: Path, tiers: list[tuple[str, str]], pairs: list[tuple[str, str]], framing: str = "") -> Path:
    golden = folder / "golden.jsonl"
    golden.write_text("".join((DEMO / "golden-v1.jsonl").read_text(encoding="utf-8").splitlines(True)[:ROWS]))
    text = ['golden = "golden.jsonl"', "[session]", "intra_op_threads = 1", "inter_op_threads = 1"]
    for name, role in tiers:
        text += ["[[tiers]]", f'name = "{name}"', f"path = {json.dumps(str(DEMO / name))}", f'role = "{role}"']
    for drafter, verifier in pairs:
        text += ["[[pairs]]", f'drafter = "{drafter}"', f'verifier = "{verifier}"']
    text += ["[wallclock]", "warmup = 1", "warmup_s = 0.0", "repeats = 2", "k = [2]", "bootstrap = 200"]
    text += ["profile = false", "call_costs = false", "[framing]", "k = [2]", "probe_k = 2"]
    text += ["node_leg = false", "web_leg = false", framing]
    path = folder / "suite.toml"
    path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return path


def _run(folder: Path, *args: str) -> Path:
    assert main(["run", "--config", str(folder / "suite.toml"), "--results", str(folder / "results"), *args]) == 0
    (path,) = sorted((folder / "results").glob("*/*.json"))
    return path


@pytest.fixture(scope="module")
def og_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("og")
    _config(folder, TIERS, [("lm-small-fp32", "lm-base-fp32")])
    path = _run(folder)
    return folder / "results", path, load_record(path)  # stored packed: read as every verb reads it


def _og(doc: dict) -> dict:
    (leg,) = [leg for leg in doc["framing"]["legs"] if leg["runtime"] == "onnxruntime-genai"]
    return leg


def _tier(leg: dict, name: str) -> dict:
    return next(t for t in leg["tiers"] if t["tier"] == name)


@needs_og
def test_the_leg_records_decodes_timing_ratio_and_skips_seq2seq(og_run):
    _, path, doc = og_run
    validate(doc, str(path))
    leg = _og(doc)
    assert leg["status"] == "measured" and leg["language"] == "c++" and leg["version"]
    assert doc["config"]["framing"]["genai_leg"] is True
    assert _tier(leg, "small-fp32") == {
        "tier": "small-fp32",
        "precision": "fp32",
        "status": "skipped",
        "reason": SEQ2SEQ_SKIP,
    }
    for name in ("genai-base-fp32", "lm-base-fp32", "lm-small-fp32"):
        t = _tier(leg, name)
        assert t["status"] == "measured" and len(t["output_ids"]) == len(t["outputs"]) == ROWS
        assert t["timing"]["tokens"] == sum(len(ids) for ids in t["output_ids"]) and len(t["timing"]["greedy_ms"]) == 3
        g = t["genai"]
        assert g["config"] == ("folder" if name.startswith("genai") else "generated")
        assert g["cache"]["past_present_share_buffer"] is name.startswith("genai")
        ratios = [(m / g["measure_steps"]) / (o / g["steps"]) for m, o in _step_ms(g)]
        assert g["measure_over_og"]["samples"] == pytest.approx(ratios)
        assert g["measure_over_og"]["median"] == pytest.approx(median(ratios))
    record = from_document(load_record(path), str(path))
    og = record.legs[-1]
    assert (
        og.tier("lm-base-fp32").genai.measure_over_og.median
        == _tier(leg, "lm-base-fp32")["genai"]["measure_over_og"]["median"]
    )


@needs_og
def test_the_genai_leg_reads_and_writes_back_as_the_run_wrote_it(og_run):
    """No golden record has this leg: a real run's framing section, read into its classes and written back, is the
    section it was, key for key (its genai tiers and pairs included, so none is read past or dropped)."""
    _, _, doc = og_run
    leg = _og(doc)
    genai = [t["genai"] for t in leg["tiers"] if "genai" in t]
    assert genai and leg["speculative"]  # the parts this test is about are there
    assert [GenaiTier.from_dict(g).to_dict() for g in genai] == genai
    assert [GenaiPair.from_dict(p).to_dict() for p in leg["speculative"]] == leg["speculative"]
    written = Framing.from_dict(doc["framing"]).to_dict()
    assert json.dumps(written, sort_keys=True) == json.dumps(doc["framing"], sort_keys=True)


def _step_ms(g: dict) -> list[tuple[float, float]]:
    """Each repeat's summed decode-step ms of measure's loop and og's, from the per-step medians' samples."""
    return [
        (m * g["measure_steps"], o * g["steps"])
        for m, o in zip(g["measure_ms_per_step"]["samples"], g["ms_per_step"]["samples"], strict=True)
    ]


@needs_og
def test_fp32_decodes_under_og_equal_pythons_on_every_row(og_run):
    """By construction: the same fp32 graph and kernels under both loops."""
    _, _, doc = og_run
    python = {t["tier"]: t for t in doc["framing"]["legs"][0]["tiers"]}
    leg = _og(doc)
    for name in ("genai-base-fp32", "lm-base-fp32", "lm-small-fp32"):
        t = _tier(leg, name)
        assert t["output_ids"] == python[name]["output_ids"] and t["outputs"] == python[name]["outputs"]
        assert t["divergence"] == [] and t["genai"]["equal_rows"] == ROWS
        assert t["genai"]["logits_max_abs_diff"] <= 1e-5


@needs_og
def test_speculative_decoding_under_og_sits_beside_measures_for_the_pair(og_run):
    _, _, doc = og_run
    (pair,) = _og(doc)["speculative"]
    assert (pair["drafter"], pair["verifier"], pair["k"]) == ("lm-small-fp32", "lm-base-fp32", 2)
    assert pair["status"] == "measured" and pair["rows"] == ROWS
    assert pair["equal_greedy_rows"] == ROWS and pair["differing_rows"] == []  # fp32: greedy by construction
    assert 0 <= pair["acceptance"]["accepted"] <= pair["acceptance"]["proposed"]
    ours = pair["measure"]
    assert ours["equal_greedy_rows"] == ROWS and 0 <= ours["acceptance"]["accepted"] <= ours["acceptance"]["proposed"]
    assert pair["speedup"] > 0 and ours["speedup"] > 0


@needs_og
@pytest.mark.parametrize(
    ("break_it", "field"),
    [
        (lambda leg: leg["speculative"][0]["acceptance"].update(accepted=10**6), "speculative/0/acceptance"),
        (lambda leg: leg["speculative"][0].update(verifier="no-such-tier"), "speculative/0/verifier"),
        (lambda leg: leg["tiers"][0]["genai"].update(equal_rows=ROWS + 1), "tiers/0/genai/equal_rows"),
        (lambda leg: leg["tiers"][0]["genai"].update(config="elsewhere"), "tiers/0/genai/config"),
    ],
)
def test_a_broken_genai_leg_is_one_line_naming_file_and_field_exit_2(og_run, tmp_path, capsys, break_it, field):
    _, path, doc = og_run
    bad = json.loads(json.dumps(doc))
    break_it(_og(bad))
    target = tmp_path / "results" / bad["machine_id"] / path.name
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(bad), encoding="utf-8")
    assert main(["show", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(target) in err and field in err and "Traceback" not in err


def _cells(text: str) -> list[str]:
    return html_module.unescape(re.sub(r"<[^>]+>", " ", text)).split()


@needs_og
def test_pages_show_the_og_column_the_ratio_sentence_and_speculative(og_run, tmp_path):
    results, _, doc = og_run
    assert main(["render", "--results", str(results), "--out", str(tmp_path / "md")]) == 0
    project = site_project(tmp_path / "p")
    done = build(project, results)
    assert done.returncode == 0, done.stderr[-3000:]
    leg = _og(doc)
    wall = " ".join(_cells(html(project, "results/wallclock")))
    for name in ("genai-base-fp32", "lm-base-fp32", "lm-small-fp32"):
        ratio = _tier(leg, name)["genai"]["measure_over_og"]
        s = ratio["samples"]
        sentence = (
            f"measure's loop costs {ratio['median']:.2f}× onnxruntime-genai's compiled loop per decode step on {name}"
        )
        assert sentence in wall
        assert f"range {min(s):.2f}–{max(s):.2f} over 3 repeats" in wall
    framing = html(project, "results/framing")
    head = f"onnxruntime-genai {leg['version']} (c++)"
    matrix = framing.split('id="runtimes"', 1)[1].split("</table>", 1)[0]
    seen = " ".join(_cells(matrix))
    assert head in seen and f"{ROWS * 3}/{ROWS * 3} rows as Python's" in seen
    assert "Speculative decoding under onnxruntime-genai" in framing and "runtime-speculative" in framing
    assert SEQ2SEQ_SKIP in html_module.unescape(framing)
    assert "onnxruntime-genai leg" in html(project, "results/methods")


@needs_og
def test_show_prints_the_leg(og_run, capsys):
    _, path, _ = og_run
    assert main(["show", str(path)]) == 0
    out = capsys.readouterr().out
    leg = out.split("onnxruntime-genai", 1)[1]
    assert f"{ROWS}/{ROWS} rows = Python" in leg and "measure's loop" in leg and "x og per step" in leg
    assert "speculative lm-small-fp32->lm-base-fp32 k=2" in leg and "small-fp32" in leg


def test_genai_leg_false_turns_the_leg_off_and_is_stored(tmp_path):
    _config(tmp_path, [("lm-small-fp32", "plain")], [], "genai_leg = false")
    doc = load_record(_run(tmp_path, "--suite", "framing"))
    assert [leg["runtime"] for leg in doc["framing"]["legs"]] == ["onnxruntime"]
    assert doc["config"]["framing"]["genai_leg"] is False


_BLOCKED = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "onnxruntime_genai" or name.startswith("onnxruntime_genai."):
            raise ImportError("blocked for the test")
sys.meta_path.insert(0, Block())
from measure.cli import main
sys.exit(main(["run", "--suite", "framing", "--config", sys.argv[1], "--results", sys.argv[2]]))
"""


def test_the_leg_is_skipped_with_its_reason_when_onnxruntime_genai_is_not_importable(tmp_path):
    config = _config(tmp_path, [("genai-base-fp32", "plain")], [])
    done = subprocess.run(
        [sys.executable, "-c", _BLOCKED, str(config), str(tmp_path / "results")],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (path,) = sorted((tmp_path / "results").glob("*/*.json"))
    doc = load_record(path)
    validate(doc, str(path))
    leg = _og(doc)
    assert leg["status"] == "skipped" and leg["tiers"] == [] and leg["speculative"] == []
    assert "onnxruntime_genai is not importable" in leg["reason"] and "blocked for the test" in leg["reason"]


_BOTTOM = """(id) => {
    let e = document.getElementById(id);
    while (e && !e.matches('ul, table, .md-typeset__scrollwrap')) e = e.nextElementSibling;
    return (e || document.getElementById(id)).getBoundingClientRect().bottom;
}"""
"""The bottom of the first list or table after a heading: where a screenshot of that section ends."""


@needs_og
def test_the_og_matrix_and_the_ratio_sentence_in_chromium_light_dark_390(og_run, tmp_path):
    """Screenshots of the Framing parity matrix and the Wall-clock sentence under /work/tools/shots (gw-*.png)."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    if not Path(CHROMIUM).is_file():
        pytest.skip("Debian's chromium is not installed")
    import functools
    import http.server
    import threading

    results, _, _ = og_run
    project = site_project(tmp_path / "p")
    assert build(project, results).returncode == 0

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    site = str(project.parent / "site")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    shots = SHOTS if SHOTS.parent.is_dir() else tmp_path / "shots"
    shots.mkdir(parents=True, exist_ok=True)
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for scheme, width in (("light", 1440), ("dark", 1440), ("light", 390)):
                context = browser.new_context(viewport={"width": width, "height": 900}, color_scheme=scheme)
                tab = context.new_page()
                for page, anchor, stop in (
                    ("framing", "runtimes", "runtime-speculative"),
                    ("wallclock", "compiled-loop", None),
                ):
                    tab.goto(f"{base}/results/{page}/", wait_until="networkidle")
                    assert tab.evaluate("() => document.documentElement.scrollWidth") <= width + 1, page
                    top = tab.evaluate(f"() => document.getElementById('{anchor}').getBoundingClientRect().top")
                    end = tab.evaluate(_BOTTOM, stop or anchor)  # down to og's pairs, or the Wall-clock sentences
                    tab.set_viewport_size({"width": width, "height": int(max(end, top + 200) + 40)})
                    tab.screenshot(
                        path=str(shots / f"gw-{page}-{scheme}-{width}.png"),
                        clip={"x": 0, "y": max(top - 20, 0), "width": width, "height": max(end - top, 200) + 20},
                    )
                    tab.set_viewport_size({"width": width, "height": 900})
                context.close()
            browser.close()
    finally:
        server.shutdown()
    assert len(list(shots.glob("gw-*.png"))) >= 6


@needs_og
@pytest.mark.parametrize("other", [None, "lm-small-fp32"])
def test_a_tier_og_cannot_load_is_failed_with_its_message_in_the_record(tmp_path, other):
    """The split decoder layout is two graphs; og runs one: the tier fails with og's one line, the leg too when
    it is the only tier, and a tier after it still runs."""
    _config(tmp_path, [("lm-small-fp32-split", "plain"), *([(other, "drafter")] if other else [])], [])
    path = _run(tmp_path, "--suite", "framing")
    doc = load_record(path)
    validate(doc, str(path))
    leg = _og(doc)
    tier = _tier(leg, "lm-small-fp32-split")
    assert tier["status"] == "failed" and "causal-split" in tier["reason"] and "\n" not in tier["reason"]
    if other is None:
        assert leg["status"] == "failed" and leg["reason"] == tier["reason"]
    else:
        assert leg["status"] == "measured" and "reason" not in leg and _tier(leg, other)["status"] == "measured"
