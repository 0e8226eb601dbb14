"""The onnxruntime-web leg: the same tier folders and framings, decoded in a real browser page.

A tier served to browsers runs under onnxruntime-web's wasm execution provider, whose
kernels differ from native ones by construction (int4 MatMulNBits dequantizes to an fp32
GEMM; dynamic int8 uses another dot-product kernel; threads only in a cross-origin
isolated page). This module serves the page (``web/``), onnxruntime-web's wasm build
from ``node_modules`` and each tier's graph files over loopback (:mod:`measure.suites.legs.web_server`),
and drives the system's Chromium headless through playwright-core (``web/drive.mjs``,
under Node.js). The page runs ``node/framing-core.mjs``, the framing facts the Node leg
runs too, on the request :func:`measure.suites.legs.node_driver.describe` builds. A missing browser,
Node.js or npm package is a :class:`LegUnavailable` with the reason, never a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from measure.engine.skeleton import load_skeleton, split_weights
from measure.engine.tier import Tier
from measure.suites.legs import node_driver
from measure.suites.legs.contract import LegFailed, LegSkipped, LegUnavailable
from measure.suites.legs.node_driver import NodeRow
from measure.suites.legs.web_server import LoopbackServer

RUNTIME = "onnxruntime-web"
WEB_DIR = Path(__file__).resolve().parent / "web"
PAGE = WEB_DIR / "index.html"
PAGE_SCRIPT = WEB_DIR / "page.mjs"
DRIVER = WEB_DIR / "drive.mjs"
CORE = node_driver.SCRIPT.parent / "framing-core.mjs"
"""The framing facts in JavaScript, shared with the Node leg."""
ORT_FILES = ("ort.wasm.min.mjs", "ort-wasm-simd-threaded.mjs", "ort-wasm-simd-threaded.wasm")
"""What the page loads of onnxruntime-web's ``dist/``: the wasm-only build (CPU, SIMD, threads)."""
ORT_WEBGPU_FILES = ("ort.webgpu.min.mjs", "ort-wasm-simd-threaded.asyncify.mjs", "ort-wasm-simd-threaded.asyncify.wasm")
"""What the page loads for the WebGPU leg: onnxruntime-web's WebGPU build (its WebGPU execution provider)."""
PROVIDERS = {"wasm": ORT_FILES, "webgpu": ORT_WEBGPU_FILES}
START_TIMEOUT_S = 60.0
TIER_TIMEOUT_S = {"wasm": 900.0, "webgpu": 3600.0}
"""The most one tier may take in the page. WebGPU's is longer: on a software adapter (SwiftShader) the demo's
genai-base-int4 takes over 15 minutes over 64 golden rows on two cores."""


def find_browser(browser: str) -> str:
    """The browser executable's path (a path, or a name on PATH), or :class:`LegUnavailable`."""
    found = shutil.which(browser)
    if found is None:
        raise LegUnavailable(f"the browser ({browser!r}) was not found; set [framing] browser to Chromium's path")
    return found


def package_places() -> list[Path]:
    """Where npm packages are looked for, in order, as framing.mjs looks for onnxruntime-node."""
    places = [Path(os.environ["MEASURE_NODE_MODULES"])] if os.environ.get("MEASURE_NODE_MODULES") else []
    return [*places, Path(__file__).resolve().parent, Path.cwd()]


def find_package(name: str) -> Path:
    """The folder holding ``node_modules/<name>``, walking up from each place as Node's resolver does."""
    for place in package_places():
        for folder in (place, *place.parents):
            if (folder / "node_modules" / name / "package.json").is_file():
                return folder
    looked = ", ".join(str(p) for p in package_places())
    raise LegUnavailable(
        f"{name} is not installed (looked from {looked}); install it with `npm ci --ignore-scripts` in the "
        "project root or set MEASURE_NODE_MODULES"
    )


def _tensors(graph: Any) -> Any:
    """Every tensor a graph holds: initializers and tensor attributes, subgraphs (If branches) included."""
    import onnx

    yield from graph.initializer
    for node in graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                yield attr.t
            for sub in (attr.g, *attr.graphs) if attr.HasField("g") else attr.graphs:
                yield from _tensors(sub)


def external_data(graph: Path) -> list[str]:
    """The files a graph keeps its tensors in beside itself (ONNX external data), which the page also fetches."""
    import onnx

    if not graph.is_file():
        return []  # the page reports the graph it cannot fetch, in the words it fails with
    try:
        model = load_skeleton(graph)  # not onnx.load: a graph holding its weights would double them here
    except Exception as exc:  # a graph that does not parse fails to load in the page too; say it here
        raise LegFailed(f"{graph.name}: not an ONNX graph ({type(exc).__name__}: {exc})") from exc
    names: list[str] = []
    for tensor in _tensors(model.graph):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = next((e.value for e in tensor.external_data if e.key == "location"), "")
        if not location or Path(location).name != location or location in (".", ".."):
            raise LegSkipped(f"{graph.name}: external data {location!r} is not a file beside the graph")
        if location not in names:
            names.append(location)
    return names


def warmup_graph() -> bytes:
    """The smallest graph (one Identity): the page loads it first, so onnxruntime-web's wasm is compiled and
    started before the first tier (while the Python leg decodes it), not inside that tier's decodes."""
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "warmup", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
    onnx.checker.check_model(model)
    return bytes(model.SerializeToString())


def _served(tier: Tier, request: dict[str, Any], split: Path) -> tuple[dict[str, Path], dict[str, Any]]:
    """The files the page fetches by name, and the request naming them: each graph that holds weights is served
    with them moved beside it (:func:`~measure.engine.skeleton.split_weights`, written under ``split``), the
    same tensors in the form onnxruntime-web holds twice rather than three times while it loads (for a 650 MB
    fp32 graph, Chromium's page peaked at 3.0 GB with the weights inside and 2.0 GB with them beside)."""
    graphs = request["external_data"]
    files = {name: tier.path / name for name in {*graphs, *(f for names in graphs.values() for f in names)}}
    external = dict(graphs)
    for graph, names in graphs.items():
        if not (tier.path / graph).is_file():
            continue  # the page reports the graph it cannot fetch, in the words it fails with
        data = next(f"{graph}.{n}.data" for n in range(len(names) + 1) if f"{graph}.{n}.data" not in files)
        try:
            moved = split_weights(tier.path / graph, split / graph, split / data)
        except (OSError, ValueError) as exc:
            raise LegFailed(f"{tier.name}: {graph}: its weights could not be moved beside it: {exc}") from exc
        if moved:
            files |= {graph: split / graph, data: split / data}
            external[graph] = [*names, data]
    return files, request | {"external_data": external}


class WebRuntime:
    """One browser, one loopback server and one page for a whole leg (the page is reloaded after a failure).

    Start it with ``with WebRuntime(...) as web:``; :meth:`run_tier` answers like
    :func:`measure.suites.legs.node_driver.run_tier` plus the page's execution facts.
    """

    def __init__(
        self,
        browser: str = "chromium",
        *,
        node: str = "node",
        threads: int = 0,
        timeout_s: float | None = None,
        provider: str = "wasm",
    ) -> None:
        """Start the server and the browser; the page starts loading (and onnxruntime-web's wasm with
        ``threads``, 0 for its default) at once, while the caller goes on with the Python leg.
        ``provider`` ``webgpu`` enables WebGPU in the browser and runs every session on its adapter.
        ``timeout_s``: the most one tier may take (default :data:`TIER_TIMEOUT_S` for the provider)."""
        if provider not in PROVIDERS:
            raise ValueError(f"provider: expected one of {', '.join(PROVIDERS)}, got {provider!r}")
        self.timeout_s = TIER_TIMEOUT_S[provider] if timeout_s is None else timeout_s
        self.threads = threads
        self.provider = provider
        browser_path = find_browser(browser)
        executable = node_driver.find_node(node)
        self.dist = find_package("onnxruntime-web") / "node_modules" / "onnxruntime-web" / "dist"
        root = find_package("playwright-core")
        files = PROVIDERS[provider]
        missing = [f for f in files if not (self.dist / f).is_file()]
        if missing:
            raise LegUnavailable(f"onnxruntime-web at {self.dist} lacks {', '.join(missing)}; reinstall it")
        self.server: LoopbackServer | None = LoopbackServer()
        self.server.add_file("/index.html", PAGE)
        self.server.add_file("/page.mjs", PAGE_SCRIPT)
        self.server.add_file("/framing-core.mjs", CORE)
        self.server.add_bytes("/warmup.onnx", warmup_graph(), "application/octet-stream")
        self.server.add_bytes("/favicon.ico", b"", "image/x-icon")  # asked for by the browser: no 404 to report
        for name in files:
            self.server.add_file(f"/ort/{name}", self.dist / name)
        self.page = self.server.url(f"/index.html?threads={int(threads)}&provider={provider}")
        self._stderr: deque[str] = deque(maxlen=20)
        self._lines: queue.Queue[str | None] = queue.Queue()
        try:
            self._proc = subprocess.Popen(
                [executable, str(DRIVER), browser_path, str(root), self.page, provider],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                env=os.environ.copy(),
            )
        except OSError as exc:
            self.server.close()
            raise LegUnavailable(f"Node.js ({executable}) cannot be started: {exc.strerror}") from exc
        threading.Thread(target=self._read, args=(self._proc.stdout, self._lines), daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        try:
            ready = self._next(START_TIMEOUT_S, "starting the browser")
            if ready.get("status") == "skipped":
                raise LegUnavailable(ready.get("reason", "playwright-core is not installed"))
            if ready.get("status") != "ready":
                raise LegFailed(f"{RUNTIME}: {ready.get('reason') or self._tail() or 'the browser did not start'}")
            self.host: str = ready["browser"]
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _read(stream: Any, into: queue.Queue[str | None]) -> None:
        for line in stream:
            into.put(line)
        into.put(None)

    def _drain(self) -> None:
        assert self._proc.stderr is not None
        for line in self._proc.stderr:
            if line.strip():
                self._stderr.append(line.strip())

    def _tail(self) -> str:
        return " | ".join(list(self._stderr)[-3:])

    def _next(self, timeout_s: float, doing: str) -> dict[str, Any]:
        """The driver's next JSON line; :class:`LegFailed` when it stops, hangs or writes something else."""
        try:
            line = self._lines.get(timeout=timeout_s)
        except queue.Empty:
            self._proc.kill()  # a late answer would be taken for the next tier's: no next tier on this driver
            raise LegFailed(f"{RUNTIME}: {doing} took longer than {timeout_s:g} s") from None
        if line is None:
            self._proc.wait(timeout=5)
            raise LegFailed(f"{RUNTIME}: the driver stopped while {doing}: {self._tail() or self._proc.returncode}")
        try:
            answer = json.loads(line)
        except json.JSONDecodeError as exc:
            raise LegFailed(f"{RUNTIME}: {DRIVER.name} wrote something that is not JSON ({exc.msg})") from exc
        if not isinstance(answer, dict):
            raise LegFailed(f"{RUNTIME}: {DRIVER.name} wrote no answer; expected one JSON object a line")
        return answer

    def request(
        self,
        tier: Tier,
        rows: list[NodeRow],
        blocks: list[int | str],
        described: dict[str, Any] | None = None,
        prefill_rows: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """What the page reads: the Node leg's request, minus local paths, plus the graphs' external data files
        (``described``: the tier as :func:`~measure.suites.legs.node_driver.describe` gave it while it was loaded)."""
        described = dict(described or node_driver.describe(tier))
        del described["folder"]  # the page fetches files by name from the server, never by path
        graphs = node_driver.graph_files(described)
        try:
            external = {g: external_data(tier.path / g) for g in graphs}
        except (LegSkipped, LegFailed) as exc:
            raise type(exc)(f"{tier.name}: {exc}") from exc
        return (
            described
            | node_driver.request_rows(rows, blocks, extra.pop("timing_repeats", 0), prefill_rows)
            | {
                "tier": tier.name,
                "external_data": external,
            }
            | extra
        )

    @contextlib.contextmanager
    def serving(self, tier: Tier, request: dict[str, Any]) -> Iterator[str]:
        """Serve one tier's graph files and its request under a fresh token while the page needs them."""
        assert self.server is not None
        token = secrets.token_hex(8)
        with tempfile.TemporaryDirectory(prefix="measure-web-") as split:
            files, request = _served(tier, request, Path(split))
            for name, file in files.items():
                self.server.add_file(f"/tiers/{token}/{name}", file)
            self.server.add_bytes(f"/requests/{token}.json", json.dumps(request).encode("utf-8"))
            try:
                yield token
            finally:
                self.server.remove(f"/tiers/{token}/")
                self.server.remove(f"/requests/{token}.json")

    def run_tier(
        self,
        tier: Tier,
        rows: list[NodeRow],
        blocks: list[int | str],
        *,
        timing_repeats: int = 0,
        first_row_logits: bool = False,
        described: dict[str, Any] | None = None,
        prefill_rows: int | None = None,
    ) -> dict[str, Any]:
        """Framing facts and greedy decodes of one tier in the leg's page; a page that fails says why.

        The page stays loaded from tier to tier (onnxruntime-web's wasm starts once); the driver
        loads it afresh after a tier fails. ``described`` and ``prefill_rows`` as
        :func:`node_driver.run_tier` takes them.
        """
        assert self.server is not None
        request = self.request(
            tier,
            rows,
            blocks,
            described,
            prefill_rows,
            timing_repeats=timing_repeats,
            return_first_row_logits=first_row_logits,
        )
        with self.serving(tier, request) as token:
            visit = {"url": self.page, "token": token, "timeout_ms": int(self.timeout_s * 1000)}
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps(visit) + "\n")
                self._proc.stdin.flush()
            except OSError as exc:
                raise LegFailed(f"{tier.name}: the browser driver is gone: {self._tail() or exc}") from exc
            answer = self._next(self.timeout_s + 30, f"decoding {tier.name}")
        if answer.get("status") == "skipped":  # no WebGPU adapter: no tier can run in this browser
            raise LegUnavailable(answer.get("reason") or "the page skipped the tier")
        if answer.get("status") != "measured":
            raise LegFailed(f"{tier.name}: {RUNTIME} failed: {answer.get('reason') or 'no reason given'}")
        if len(answer.get("output_ids", ())) != len(rows) or len(answer.get("blocks", ())) != len(blocks):
            raise LegFailed(
                f"{tier.name}: the page answered {len(answer.get('output_ids', ()))} rows and "
                f"{len(answer.get('blocks', ()))} blocks; expected {len(rows)} and {len(blocks)}"
            )
        return answer

    def close(self) -> None:
        if self.server is not None:
            self.server.close()
            self.server = None
        if self._proc.poll() is None:
            with contextlib.suppress(OSError):
                assert self._proc.stdin is not None
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout=5)

    def __enter__(self) -> WebRuntime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
