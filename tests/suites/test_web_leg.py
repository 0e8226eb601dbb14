"""The onnxruntime-web leg in real headless Chromium, on the real demo tiers, and its loopback server."""

from __future__ import annotations

import copy
import http.client
import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from tests_support import (
    CHROMIUM,
    DATA_DIR,
    assert_same_framing,
    build,
    causal_rows,
    html,
    python_causal_facts,
    site_project,
    web_ready,
    write_config,
)

from measure import bundled
from measure.analysis.rules import verdicts
from measure.analysis.runtime_axis import runtime_speeds
from measure.engine.load import load_tier
from measure.engine.options import SessionConfig
from measure.engine.tier import Tier
from measure.errors import MeasureError
from measure.record.io import load_record, validate, write_atomic
from measure.record.model import from_document
from measure.site.escape import md
from measure.suites.config import load_config
from measure.suites.golden import GoldenRows
from measure.suites.legs import contract, node_driver, web_driver
from measure.suites.legs.web_server import LoopbackServer
from measure.suites.runner import run

needs_web = pytest.mark.skipif(
    not web_ready(),
    reason="needs Chromium, Node.js and the npm packages: `npm ci --ignore-scripts --no-audit --no-fund` "
    "(.ci/run installs chromium and runs it)",
)


@pytest.fixture(scope="module")
def web():
    if not web_ready():
        pytest.skip("no Chromium, Node.js or npm packages here")
    with web_driver.WebRuntime(CHROMIUM, threads=1) as runtime:
        yield runtime


def _rows(tier: Tier, golden: GoldenRows, rows: list[int]) -> tuple[list[node_driver.NodeRow], list[list[int]]]:
    out, decoded = [], []
    for i in rows:
        row = golden.rows[i]
        ids = tier.source_ids(row.input)
        tokens = list(tier.greedy(row.input).tokens)
        prefix = [tier.special.decoder_start, *tokens]
        out.append(node_driver.NodeRow(ids, prefix, tier.default_max_new_tokens(len(ids)), row.line, row.input))
        decoded.append(tokens)
    return out, decoded


def _get(server: LoopbackServer, path: str, host: str | None = None, method: str = "GET") -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    conn.putheader("Host", host or f"127.0.0.1:{server.port}")
    conn.endheaders()
    answer = conn.getresponse()
    body = answer.read()
    conn.close()
    return answer.status, dict(answer.getheaders()), body


# --- the loopback server: only what was registered, only on 127.0.0.1 ------------------------------------


def test_the_server_answers_only_registered_paths_with_isolation_headers(tmp_path):
    served = tmp_path / "graphs" / "encoder.onnx"
    served.parent.mkdir()
    served.write_bytes(b"onnx bytes")
    (tmp_path / "secret.txt").write_text("not for the page", encoding="utf-8")
    with LoopbackServer() as server:
        assert server.origin.startswith("http://127.0.0.1:") and server.port > 0
        server.add_file("/tiers/abc/encoder.onnx", served)
        server.add_bytes("/requests/abc.json", b'{"rows": []}')
        status, headers, body = _get(server, "/tiers/abc/encoder.onnx")
        assert (status, body) == (200, b"onnx bytes")
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        assert headers["Content-Type"] == "application/octet-stream"
        assert "script-src 'self' 'wasm-unsafe-eval'" in headers["Content-Security-Policy"]
        assert _get(server, "/requests/abc.json?x=1")[0] == 200  # the query is not part of the path
        for path in (
            "/tiers/abc/../../secret.txt",
            "/tiers/abc/%2e%2e/%2e%2e/secret.txt",
            "/tiers/abc/..%2f..%2fsecret.txt",
            "/tiers/abc/",
            "/tiers/abc",
            "//etc/passwd",
            "/" + str(tmp_path / "secret.txt"),
            "/secret.txt",
            "/tiers/ABC/encoder.onnx",
        ):
            status, _, body = _get(server, path)
            assert status == 404 and b"not for the page" not in body, path
        # another name for the port (DNS rebinding) is refused; so is any method but GET and HEAD
        assert _get(server, "/requests/abc.json", host="evil.example:80")[0] == 403
        assert _get(server, "/requests/abc.json", method="POST")[0] == 501
        assert _get(server, "/requests/abc.json", method="HEAD")[2] == b""
        server.remove("/tiers/abc/")
        assert _get(server, "/tiers/abc/encoder.onnx")[0] == 404
        server.add_file("/gone.onnx", tmp_path / "missing.onnx")
        assert _get(server, "/gone.onnx")[0] == 404
        with pytest.raises(ValueError, match="starts with /"):
            server.add_bytes("relative.json", b"{}")


def test_the_page_is_static_and_the_files_ship_inside_the_package():
    for path in (web_driver.PAGE, web_driver.PAGE_SCRIPT, web_driver.DRIVER, web_driver.CORE):
        assert path.is_file() and Path(web_driver.__file__).parent in path.parents
    page = web_driver.PAGE.read_text(encoding="utf-8")
    assert '<script type="module" src="page.mjs"></script>' in page
    assert "{" not in page  # nothing is templated into the markup


def test_external_data_files_are_found_beside_the_graph(tmp_path):
    import onnx

    model = onnx.load(str(bundled.SMALL_FP32 / "encoder.onnx"))
    onnx.save(model, str(tmp_path / "encoder.onnx"), save_as_external_data=True, location="encoder.onnx.data")
    assert web_driver.external_data(tmp_path / "encoder.onnx") == ["encoder.onnx.data"]
    assert web_driver.external_data(bundled.SMALL_FP32 / "encoder.onnx") == []
    (tmp_path / "broken.onnx").write_bytes(b"\x00not a graph")
    with pytest.raises(contract.LegFailed, match=r"broken\.onnx: not an ONNX graph"):
        web_driver.external_data(tmp_path / "broken.onnx")


def test_each_graph_is_served_with_its_weights_moved_beside_it(base_fp32, tmp_path):
    import onnx

    graphs = node_driver.graph_files(node_driver.describe(base_fp32))
    request = {
        "tier": base_fp32.name,
        "external_data": {g: web_driver.external_data(base_fp32.path / g) for g in graphs},
    }
    files, served = web_driver._served(base_fp32, request, tmp_path)
    assert request["external_data"] == {g: [] for g in graphs}  # the caller's request is left as it was
    for graph in graphs:
        assert served["external_data"][graph] == [f"{graph}.0.data"]
        assert files[graph] == tmp_path / graph and files[f"{graph}.0.data"].stat().st_size > 0
        assert files[graph].stat().st_size < (base_fp32.path / graph).stat().st_size // 4
        assert web_driver.external_data(files[graph]) == [f"{graph}.0.data"]  # what the page will be told
        original = onnx.load(str(base_fp32.path / graph))
        assert onnx.load(str(files[graph])).graph.node == original.graph.node
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "encoder.onnx").write_bytes(b"\x0a\xff\x01")  # a field that runs past the file
    tier = SimpleNamespace(name="broken", path=broken)  # what serving reads of a tier: its name and folder
    with pytest.raises(contract.LegFailed, match=r"encoder\.onnx: its weights could not be moved beside it"):
        web_driver._served(tier, {"external_data": {"encoder.onnx": []}}, tmp_path)


# --- the leg in Chromium on the demo tiers -------------------------------------------------------------------


@needs_web
def test_fp32_in_the_browser_gives_python_onnxruntimes_logits_and_decodes(web, base_fp32, golden):
    rows, decoded = _rows(base_fp32, golden, list(range(6)))
    answer = web.run_tier(base_fp32, rows, [2, "whole"], first_row_logits=True, timing_repeats=2)
    python, _ = base_fp32.feed_prefix(rows[0].source_ids, rows[0].prefix, 1)
    browser = np.asarray(answer["first_row_single_logits"], dtype=np.float64)
    assert browser.shape == python.shape
    assert np.abs(browser - python).max() <= 1e-4  # fp32 in wasm against native fp32: rounding only
    assert answer["version"] == "1.30.0"  # the version package-lock.json pins
    parted = {d["row"]: d for d in answer["divergence"]}
    for i, (ours, theirs) in enumerate(zip(decoded, answer["output_ids"], strict=True)):
        if ours == theirs:
            assert i not in parted
        else:  # a different fp32 decode can only be a near-tie, and the leg says where
            step = next((j for j, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), len(ours))
            assert parted[i]["step"] == step and parted[i]["margin"] <= 1e-3
    execution = answer["execution"]
    assert execution["provider"] == "wasm" and execution["cross_origin_isolated"] is True
    assert execution["simd"] is True and execution["threads"] == execution["threads_requested"] == 1
    timing = answer["timing"]
    assert len(timing["greedy_ms"]) == 2 and all(ms > 0 for ms in timing["greedy_ms"])
    assert timing["tokens"] == sum(len(d) for d in decoded)
    assert [b["block"] for b in answer["blocks"]] == [2, "whole"]
    assert all(b["argmax_total"] == sum(len(r.prefix) for r in rows) for b in answer["blocks"])


@needs_web
@pytest.mark.parametrize("folder", [bundled.PLAIN, bundled.LITE], ids=["int8-dynamic", "int4"])
def test_quantized_tiers_are_measured_in_the_browser_not_assumed(web, folder, golden):
    tier = load_tier(folder)
    rows, _ = _rows(tier, golden, list(range(4)))
    answer = web.run_tier(tier, rows, [4])
    (block,) = answer["blocks"]
    assert len(block["layers"]) == tier.shape.layers
    assert len(block["first_divergent_step"]) == 4
    assert "timing" not in answer  # timing_repeats = 0 times nothing
    # whatever the kernels do, a row the browser decodes differently is located on Python's own prefix
    for d in answer["divergence"]:
        row, ids = rows[d["row"]], answer["output_ids"][d["row"]]
        assert ids[: d["step"]] == row.prefix[1 : d["step"] + 1]
        assert d["expected"] == [*row.prefix, tier.special.eos][d["step"] + 1] and d["margin"] >= 0
    parted = {d["row"] for d in answer["divergence"]}
    assert {i for i, r in enumerate(rows) if answer["output_ids"][i] != r.prefix[1:]} <= parted


@needs_web
def test_threads_are_what_the_isolated_page_gets(tmp_path, golden):
    tier = load_tier(bundled.SMALL_FP32, SessionConfig(intra_op_threads=2))
    rows, _ = _rows(tier, golden, [0])
    with web_driver.WebRuntime(CHROMIUM, threads=2) as fresh:  # threads are set when a page's wasm starts
        execution = fresh.run_tier(tier, rows, [2])["execution"]
    assert execution["cross_origin_isolated"] is True  # COOP/COEP from the loopback server
    assert (execution["threads_requested"], execution["threads"]) == (2, 2)


@needs_web
def test_a_graph_the_wasm_build_cannot_load_fails_with_its_words_and_the_next_tier_runs(web, small_fp32, golden):
    tier = load_tier(bundled.SMALL_MERGED)  # saved with ONNX IR 14; onnxruntime-web 1.30 reads up to 13
    rows, _ = _rows(tier, golden, [0])
    with pytest.raises(
        contract.LegFailed, match=r"small-fp32-merged: onnxruntime-web failed: .*Unsupported model IR version: 14"
    ):
        web.run_tier(tier, rows, [2])
    rows, decoded = _rows(small_fp32, golden, [0])
    assert web.run_tier(small_fp32, rows, [2])["output_ids"] == decoded  # a fresh page after the failure


@needs_web
def test_a_tier_file_the_page_cannot_fetch_fails_with_the_message(web, tier_copy, golden):
    tier = load_tier(tier_copy(bundled.SMALL_FP32))
    rows, _ = _rows(tier, golden, [0])
    (tier.path / "decoder-kv.onnx").unlink()  # loaded in Python; gone when the page asks for it
    with pytest.raises(
        contract.LegFailed, match=r"small-fp32: onnxruntime-web failed: decoder-kv.onnx: the page could not fetch it"
    ) as failed:
        web.run_tier(tier, rows, [2])
    assert "HTTP 404" in str(failed.value)


def test_a_tier_past_its_timeout_says_so_and_the_next_tier_gets_a_fresh_page(web, small_fp32, golden):
    """The timeout is the reason given, not a console error from before it (the browser's favicon request was one,
    and hid a WebGPU tier's timeout behind "404"); the page is loaded afresh for the next tier."""
    rows, decoded = _rows(small_fp32, golden, [0, 1, 2, 3])
    patient = web.timeout_s
    web.timeout_s = 0.001
    try:
        with pytest.raises(contract.LegFailed, match=r"small-fp32: onnxruntime-web failed: no answer in 0.001 s$"):
            web.run_tier(small_fp32, rows, [2])
    finally:
        web.timeout_s = patient
    assert web.run_tier(small_fp32, rows, [2])["output_ids"] == decoded


HOSTILE = '<script>window.pwned = 1</script>"\'><img src=x onerror="window.pwned = 2">{{ row }}</p>'


@needs_web
def test_a_hostile_golden_row_reaches_the_page_as_data_never_as_markup(web, small_fp32, golden):
    """The request is JSON the page fetches; the row is shown with textContent, so no tag it holds is parsed."""
    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    rows, decoded = _rows(small_fp32, golden, [0, 1])
    rows[1] = node_driver.NodeRow(rows[1].source_ids, rows[1].prefix, rows[1].max_new_tokens, 99, HOSTILE)
    request = web.request(small_fp32, rows, [2], timing_repeats=0)
    with web.serving(small_fp32, request) as token, playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(web.server.url("/index.html"))
        assert HOSTILE not in page.content()
        page.wait_for_function("() => window.measureReady === true")  # a function: the CSP refuses eval
        page.evaluate(  # every text the status line shows while the page decodes
            "() => { window.seen = []; const s = document.getElementById('status');"
            " new MutationObserver(() => window.seen.push(s.textContent))"
            ".observe(s, {childList: true, characterData: true, subtree: true}); }"
        )
        answer = page.evaluate("(t) => window.measureTier(t)", token)
        seen = page.evaluate("window.seen")
        pwned = page.evaluate("window.pwned")
        images = page.evaluate("document.querySelectorAll('img').length")
        scripts = page.evaluate("document.querySelectorAll('script').length")
        browser.close()
    assert answer["status"] == "measured" and answer["output_ids"] == decoded
    assert any(HOSTILE in text and "golden line 99" in text for text in seen)
    assert (pwned, images, scripts, errors) == (None, 0, 1, [])


@needs_web
def test_the_suite_records_the_web_leg_and_the_framing_page_shows_it(both_suites, tmp_path):
    doc, path = both_suites
    python = doc["framing"]["legs"][0]
    web = next(leg for leg in doc["framing"]["legs"] if leg["runtime"] == "onnxruntime-web")
    assert (web["language"], web["version"], web["status"]) == ("browser", "1.30.0", "measured")
    assert web["host"].startswith("Chromium ") and web["host"].endswith("(headless)")
    assert web["execution"]["provider"] == "wasm" and web["execution"]["cross_origin_isolated"] is True
    assert web["execution"]["threads"] == doc["config"]["session"]["intra_op_threads"]
    assert [t["tier"] for t in web["tiers"]] == [t["tier"] for t in python["tiers"]]
    repeats = doc["config"]["framing"]["leg_repeats"]
    for p, w in zip(python["tiers"], web["tiers"], strict=True):
        assert w["status"] == "measured" and w["precision"] == p["precision"]
        assert len(w["timing"]["greedy_ms"]) == repeats
        assert w["timing"]["tokens"] == sum(len(ids) for ids in w["output_ids"])
        differing = {i for i, (a, b) in enumerate(zip(p["output_ids"], w["output_ids"], strict=True)) if a != b}
        assert differing <= {d["row"] for d in w["divergence"]}
        for d in w["divergence"]:
            assert d["line"] == d["row"] + 1 and d["python_margin"] >= 0
    project = site_project(tmp_path / "project")
    done = build(project, path.parent.parent)
    assert done.returncode == 0, done.stderr[-3000:]
    page = html(project, "results/framing")
    assert page.count(str(md("onnxruntime-web 1.30.0 (browser)"))) >= 4  # matrix, parity, hosts, speed columns
    assert "Greedy ms/token by runtime" in page and "Where each runtime ran" in page
    assert str(md("wasm, 1 thread, cross-origin isolated, SIMD on")) in page
    assert str(md("onnxruntime-web 1.30.0 (browser)")) in html(project, "results")  # its column in the Summary
    assert str(md("Are decodes unchanged in the browser?")) in html(project, "results/verdicts")
    _screenshots(project, "framing-web-leg")


def test_without_the_browser_the_leg_is_skipped_with_the_reason(tmp_path):
    config = write_config(tmp_path, rows=2, repeats=2)
    missing = tmp_path / "no-such" / "chromium"
    text = config.read_text(encoding="utf-8") + f"node_leg = false\nbrowser = {json.dumps(str(missing))}\n"
    config.write_text(text, encoding="utf-8")
    doc = load_record(run(load_config(config), ["framing"], tmp_path / "results", argv=["test"]))
    assert doc["complete"] is True
    _, web = doc["framing"]["legs"]
    assert (web["runtime"], web["status"], web["tiers"], web["version"]) == ("onnxruntime-web", "skipped", [], None)
    assert str(missing) in web["reason"] and "was not found" in web["reason"]
    project = site_project(tmp_path / "project")
    done = build(project, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    page = html(project, "results/framing")
    assert "Runtime × precision" in page and "was not found" in page


@needs_web
def test_a_browser_that_does_not_start_fails_the_leg_with_the_reason(tmp_path):
    config = write_config(tmp_path, rows=1, repeats=2)
    text = config.read_text(encoding="utf-8") + f"node_leg = false\nbrowser = {json.dumps(shutil.which('false'))}\n"
    config.write_text(text, encoding="utf-8")
    doc = load_record(run(load_config(config), ["framing"], tmp_path / "results", argv=["test"]))
    _, web = doc["framing"]["legs"]
    assert (web["status"], web["tiers"]) == ("failed", [])
    assert web["reason"].startswith("onnxruntime-web: the browser ") and "did not start" in web["reason"]


def test_without_the_npm_packages_the_leg_says_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setattr(web_driver, "package_places", lambda: [tmp_path])
    with pytest.raises(contract.LegUnavailable, match=r"onnxruntime-web is not installed .*npm ci --ignore-scripts"):
        web_driver.find_package("onnxruntime-web")


def test_web_leg_off_in_the_config_records_no_browser_leg(tmp_path):
    config = write_config(tmp_path, rows=2, repeats=2)
    config.write_text(config.read_text(encoding="utf-8") + "node_leg = false\nweb_leg = false\n", encoding="utf-8")
    doc = load_record(run(load_config(config), ["framing"], tmp_path / "results", argv=["test"]))
    assert [leg["runtime"] for leg in doc["framing"]["legs"]] == ["onnxruntime"]
    assert doc["config"]["framing"]["web_leg"] is False


def test_the_leg_repeats_setting_is_range_checked(tmp_path):
    config = write_config(tmp_path, rows=2, repeats=2)
    config.write_text(config.read_text(encoding="utf-8") + "leg_repeats = -1\n", encoding="utf-8")
    with pytest.raises(MeasureError, match=r"framing.leg_repeats: -1 is less than the minimum of 0"):
        load_config(config)


def _screenshots(project: Path, name: str) -> None:
    """The framing page's runtime sections in real Chromium, light, dark and 390 px wide, kept where .ci/run keeps
    screenshots ($MEASURE_SCREENSHOTS); no table may scroll sideways at 1440 px."""
    import functools
    import http.server
    import tempfile
    import threading

    playwright_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
    shots = Path(os.environ.get("MEASURE_SCREENSHOTS") or tempfile.mkdtemp(prefix="measure-shots-"))
    shots.mkdir(parents=True, exist_ok=True)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(project.parent / "site"))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/results/framing/"
    try:
        with playwright_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
            for scheme, width in (("light", 1440), ("dark", 1440), ("light", 390)):
                tab = browser.new_page(viewport={"width": width, "height": 900}, color_scheme=scheme)
                errors: list[str] = []
                tab.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
                tab.goto(url, wait_until="networkidle")
                if width == 1440:
                    overflow = tab.evaluate(
                        "() => [...document.querySelectorAll('.md-content .md-typeset__scrollwrap')]"
                        ".filter(w => w.scrollWidth > w.clientWidth + 1).length"
                    )
                    assert overflow == 0, f"{overflow} table(s) scroll sideways at {width} px"
                tab.evaluate("document.getElementById('runtimes').scrollIntoView()")
                tab.screenshot(path=str(shots / f"{name}-{scheme}-{width}.png"))
                assert errors == [], errors
                tab.close()
            browser.close()
    finally:
        server.shutdown()


# --- what the record says, judged and shown: a browser leg built on the golden record ------------------------


def _with_web_leg(doc: dict) -> dict:
    """The record's Node leg copied as a browser leg whose base-fp32 and small-int4 decodes part from Python's."""
    node = doc["framing"]["legs"][1]
    leg = copy.deepcopy(node) | {
        "runtime": "onnxruntime-web",
        "language": "browser",
        "host": "Chromium 156.0.8078.114 (headless)",
        "execution": {
            "provider": "wasm",
            "threads": 1,
            "threads_requested": 1,
            "cross_origin_isolated": True,
            "simd": True,
            "hardware_concurrency": 2,
        },
    }
    for t in leg["tiers"]:
        t["timing"] = {"greedy_ms": [90.0, 60.0, 62.0], "tokens": sum(len(i) for i in t["output_ids"])}
        t["divergence"] = []
    fp32 = next(t for t in leg["tiers"] if t["tier"] == "base-fp32")
    fp32["output_ids"][0] = [*fp32["output_ids"][0][:2], 5]  # token 3 of row 1: the browser picks 5
    fp32["outputs"][0] = "tu<script>alert(1)</script>"
    fp32["divergence"] = [
        {"row": 0, "line": 1, "step": 2, "token": 5, "expected": 9, "margin": 0.0123, "python_margin": 0.0045}
    ]
    int4 = next(t for t in leg["tiers"] if t["tier"] == "small-int4")
    int4["output_ids"][1] = [7]
    int4["divergence"] = [{"row": 1, "line": 2, "step": 0, "token": 7, "expected": 21, "margin": 1.5}]
    doc["framing"]["legs"].append(leg)
    return doc


def _golden_doc() -> dict:
    return load_record(DATA_DIR / "record-v3.json")  # the figures below are this fixture's


def test_a_record_with_a_browser_leg_is_schema_valid_and_read_typed():
    doc = _with_web_leg(_golden_doc())
    validate(doc, "web.json")
    leg = from_document(doc, "web.json").legs[2]
    assert leg.browser and leg.name == "onnxruntime-web 1.30.0 (browser)"
    assert (leg.execution.provider, leg.execution.threads, leg.execution.cross_origin_isolated) == ("wasm", 1, True)
    fp32 = leg.tier("base-fp32")
    assert fp32.timing.timed_ms == (60.0, 62.0)  # the recording pass is the warm-up
    (d,) = fp32.divergence
    assert (d.line, d.step, d.token, d.expected, d.python_margin) == (1, 2, 5, 9, 0.0045)
    bad = copy.deepcopy(doc)
    bad["framing"]["legs"][2]["execution"]["threads"] = 0
    with pytest.raises(MeasureError, match="framing/legs/2/execution/threads: 0 is less than the minimum of 1"):
        validate(bad, "web.json")
    bad = copy.deepcopy(doc)
    bad["framing"]["legs"][2]["tiers"][0]["divergence"][0]["margin"] = -1
    with pytest.raises(MeasureError, match="divergence/0/margin: -1 is less than the minimum of 0"):
        validate(bad, "web.json")


def test_browser_decodes_get_their_own_question_and_name_the_first_divergence():
    r = from_document(_with_web_leg(_golden_doc()), "web.json")
    found = {v.subject: v for v in verdicts(r) if v.topic == "browser-parity"}
    fp32 = found["base-fp32 under onnxruntime-web"]
    assert fp32.question == "Are decodes unchanged in the browser?"
    assert (fp32.outcome, fp32.answer, fp32.gate) == ("failure", "no: 11/12 greedy decodes identical", False)
    assert fp32.measured == "11/12 rows; first divergence: line 1, token 3 (logit margin 0.0123, Python's 0.0045)"
    int4 = found["small-int4 under onnxruntime-web"]
    assert int4.outcome == "warning"
    assert int4.measured == "11/12 rows; first divergence: line 2, token 1 (logit margin 1.5)"
    assert found["base-int8 under onnxruntime-web"].outcome == "success"
    node = [v for v in verdicts(r) if v.topic == "runtime-parity"]
    assert node and all("onnxruntime-node" in v.subject for v in node)  # the Node leg keeps its question


def test_runtime_speeds_set_each_leg_beside_python():
    r = from_document(_with_web_leg(_golden_doc()), "web.json")
    speeds = runtime_speeds(r)
    assert [leg.runtime for leg in speeds.legs] == ["onnxruntime-node", "onnxruntime-web"]
    fp32 = next(t for t in speeds.tiers if t.tier == "base-fp32")
    node, web = fp32.legs
    assert node is None  # the golden record's Node leg predates timing
    tokens = r.legs[2].tier("base-fp32").timing.tokens
    assert web.ms_per_token == pytest.approx(61.0 / tokens) and web.passes == 2
    assert (web.lo, web.hi) == (pytest.approx(60.0 / tokens), pytest.approx(62.0 / tokens))
    python = r.wallclock.cases["base-fp32"].median_ms_per_token
    assert fp32.python == python and web.vs_python == pytest.approx(61.0 / tokens / python)
    assert runtime_speeds(from_document(_golden_doc(), "golden.json")) is None  # no leg timed anything


def test_the_pages_show_the_browser_leg_and_name_the_differing_tiers(tmp_path):
    doc = _with_web_leg(_golden_doc())
    doc["framing"]["legs"][2]["host"] = "Chromium <b>bold</b>"
    write_atomic(tmp_path / "results" / doc["machine_id"] / f"{doc['run_id']}.json", doc)
    project = site_project(tmp_path / "project")
    done = build(project, tmp_path / "results")
    assert done.returncode == 0, done.stderr[-3000:]
    framing = html(project, "results/framing")
    assert "<script>alert(1)</script>" not in framing and "<b>bold</b>" not in framing
    assert "Where another runtime&#8217;s decode leaves Python&#8217;s" in framing or "decode leaves Python" in framing
    assert str(md("3: 9 → 5")) in framing and str(md("0.0123 / 0.0045")) in framing
    assert str(md("wasm, 1 thread, cross-origin isolated, SIMD on, 2 logical cores")) in framing
    web = _summary_column(html(project, "results"), "onnxruntime-web 1.30.0 (browser)")
    rows = len(doc["framing"]["legs"][0]["tiers"][0]["output_ids"])
    assert web["base-int8"] == f"{rows}/{rows}"  # the Summary names the differing tiers by their counts
    assert web["base-fp32"] == web["small-int4"] == f"{rows - 1}/{rows}"
    assert str(md("Are decodes unchanged in the browser?")) in html(project, "results/verdicts")


def _summary_column(page: str, head: str) -> dict[str, str]:
    """One column of the Overview's Summary table, tier -> the cell's text."""
    import html as html_module
    import re

    table = page[page.index('id="summary"') :]
    heads = [html_module.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<th[^>]*>(.*?)</th>", table)]
    column = heads.index(head)
    found = {}
    for row in re.findall(r"<tr>(.*?)</tr>", table, flags=re.S)[1:]:
        cells = [
            html_module.unescape(re.sub(r"<[^>]+>", " ", c)).split()
            for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
        ]
        found[cells[0][0]] = " ".join(cells[column])
    return found


# --- decoder-only tiers in the page (issue 44) ---


@needs_web
@pytest.mark.parametrize("name", ["lm-small-int4", "genai-base-int4"])
def test_a_decoder_only_tier_in_the_page_gives_python_onnxruntimes_facts(web, name, golden):
    tier = load_tier(bundled.DEMO_DIR / name, SessionConfig(intra_op_threads=1))
    rows, decoded = causal_rows(tier, golden, 4)
    answer = web.run_tier(tier, rows, [2, "whole"], first_row_logits=True)
    assert answer["execution"]["provider"] == "wasm"
    python, _ = tier.feed_prefix(rows[0].source_ids, rows[0].prefix[1:], 1)
    page = np.asarray(answer["first_row_single_logits"], dtype=np.float64)
    assert page.shape == python.shape
    # wasm's int4 kernels are not the native ones: the logits are close, not equal; the facts say how close
    assert np.abs(page - python).max() <= 0.2
    parted = {d["row"] for d in answer["divergence"]}
    for i, (ids, ours) in enumerate(zip(answer["output_ids"], decoded, strict=True)):
        assert (ids == ours) == (i not in parted)  # every row that leaves Python's is named, and only those
    assert_same_framing(answer, python_causal_facts(tier, rows, [2, "whole"]), 0.2)


@needs_web
@pytest.mark.parametrize("keep", [True, False])
def test_the_browser_is_kept_across_small_tiers_and_closed_after_a_large_one(tmp_path, monkeypatch, golden, keep):
    """One browser for the demo's small tiers (its start would be most of their turn), started with the leg; with
    tiers above KEEP_BROWSER_BYTES (here made 0) it starts at each tier's turn, not beside Python's decode of the
    first, and is closed after it, so the wasm memory a large tier grew is not held while the next legs run."""
    from measure.suites.golden import head
    from measure.suites.legs import browser
    from measure.suites.legs.contract import LegSetup
    from measure.suites.legs.python import tier_parity
    from measure.suites.legs.web import WebLeg

    if not keep:
        monkeypatch.setattr(browser, "KEEP_BROWSER_BYTES", 0)
    config = load_config(write_config(tmp_path, rows=2, repeats=2))
    rows = head(golden, 2)
    kinds = frozenset({"seq2seq", "causal"})
    leg = WebLeg(LegSetup(config.framing, (2,), kinds, threads=1, first=bundled.SMALL_FP32))
    started = [leg.web]
    try:
        for folder in (bundled.SMALL_FP32, bundled.DEMO_DIR / "lm-small-int4"):
            tier = load_tier(folder)
            leg.add(tier, rows, tier_parity(tier, rows, config.framing))
            started.append(leg.web)
        assert [t["status"] for t in leg.out["tiers"]] == ["measured", "measured"]
        if keep:
            assert started[0] is not None and started[0] is started[1] is started[2]  # one browser, from the start
        else:
            assert started == [None, None, None]
    finally:
        leg.close()
    assert leg.web is None


@needs_web
def test_a_full_precision_tier_above_the_stated_size_is_skipped_with_the_reason_and_its_quantized_one_runs(
    tmp_path, monkeypatch, golden
):
    """At real size the browser holds an fp32 graph's weights twice: above FULL_MAX_BYTES (here made 1 byte) the
    full-precision tier is the leg's skip, said in the record, and the quantized tier beside it still runs."""
    from measure.suites.golden import head
    from measure.suites.legs import browser
    from measure.suites.legs.contract import LegSetup
    from measure.suites.legs.python import tier_parity
    from measure.suites.legs.web import WebLeg

    monkeypatch.setattr(browser, "FULL_MAX_BYTES", 1)
    config = load_config(write_config(tmp_path, rows=2, repeats=2))
    rows = head(golden, 2)
    leg = WebLeg(LegSetup(config.framing, (2,), frozenset({"seq2seq"}), threads=1, first=bundled.SMALL_FP32))
    try:
        for folder in (bundled.SMALL_FP32, bundled.DEMO_DIR / "small-int8"):
            tier = load_tier(folder)
            leg.add(tier, rows, tier_parity(tier, rows, config.framing))
    finally:
        leg.close()
    fp32, int8 = leg.finish()["tiers"]
    assert fp32["status"] == "skipped" and "an fp32 tier of 1 MB is not decoded in the browser" in fp32["reason"]
    assert int8["status"] == "measured" and leg.out["status"] == "measured"
