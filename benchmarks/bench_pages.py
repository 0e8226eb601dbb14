"""Page weight and first paint: each page served from loopback in headless Chromium. Prints figures only.

For every page of a built site: bytes fetched from a cold cache (as served, and gzip-compressed as a static
host such as GitHub Pages sends them), whether plotly.js was fetched, and first contentful paint (median of
three cold loads, after one warm-up load of the browser). Budgets: pages without charts ≤ 300 kB
transferred (gzip), first contentful paint ≤ 1 s on loopback.

Run: ``python benchmarks/bench_pages.py [--site site]`` after ``mkdocs build`` (Debian's chromium and the
``playwright`` package, both in the test set-up).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import http.server
import statistics
import threading
from pathlib import Path

PAGES = ("", "results/", "results/wallclock/", "results/framing/", "results/history/", "results/runs/")
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking", "--disable-sync"]


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", type=Path, default=Path("site"))
    args = ap.parse_args()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(args.site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    print(f"{'page':<22}{'kB raw':>8}{'kB gzip':>9}{'plotly':>8}{'FCP ms':>9}  budget")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        warm = browser.new_context()
        warm.new_page().goto(f"{base}/", wait_until="networkidle")
        warm.close()
        for path in PAGES:
            fcps = []
            for _ in range(3):
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                tab = context.new_page()
                bodies: dict[str, bytes] = {}
                tab.on("response", lambda r, bodies=bodies: bodies.setdefault(r.url, r.body()))
                tab.goto(f"{base}/{path}", wait_until="networkidle")
                fcps.append(
                    tab.evaluate("() => (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime")
                )
                context.close()
            fcp = statistics.median(fcps)
            plotly = any(u.endswith("plotly.min.js") for u in bodies)
            raw = sum(map(len, bodies.values())) / 1000
            packed = sum(len(gzip.compress(b)) for b in bodies.values()) / 1000
            ok = packed <= 300 and fcp <= 1000
            budget = "ok" if ok else "OVER" if not plotly else "chart page: FCP " + ("ok" if fcp <= 1000 else "OVER")
            print(f"/{path:<21}{raw:>8.0f}{packed:>9.0f}{'yes' if plotly else 'no':>8}{fcp:>9.0f}  {budget}")
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    main()
