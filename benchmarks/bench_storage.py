"""Storage benchmark: what one machine's month of records takes, stored one ``.json.gz`` a record (as the results
branch keeps them) or as one month archive (``measure archive``: identical parts stored once). Prints figures only.

The archive is measure's own (:mod:`measure.record.archive`): each record's stored text cut at its top-level
keys, every distinct part kept once. A part repeats only when it is the same text (framing facts while the
outputs do not change, the tiers' fingerprints, the config); the wall-clock part differs from run to run. It
reports each form's size a record and what reading every record back costs, and checks that every record's bytes
come back exactly.

Two kinds of copies of one real record, since a cross-record store sees what they share:

- *drift*: as ``bench_site.py`` makes them, each case's samples scaled by a seeded drift of a few %. Scaled
  copies of the same samples share their digits' patterns, which a compressor with a long window exploits
  (xz over 20 of them: 39 kB a record, below the samples' own entropy): they flatter any cross-record store.
- *independent*: each copy also re-deals every row's repeats (one random order per row and case, applied to
  all of the case's sample fields together, and to each tier's call costs), so no copy's sample sequence is
  another's. Each value is still one the real run measured.

Then the least any lossless form of the one record could take, the floor the issue's 60 kB target meets: the
integers its samples are stored as (every repeat and row, at the record's resolution) coded as an adaptive
arithmetic code would code them (each number's bit length by adaptive counts, then its bits below the leading
one as they are: a length within bytes of what a real coder writes), beside their per-field empirical entropy
(an optimistic estimate: it counts no code table, so no coder reaches it), and everything else in the record
under gzip and xz.

Run: ``python benchmarks/bench_storage.py [--record FILE] [--records 100]``
(default record: the newest under ./results, made by ``measure run``).
"""

from __future__ import annotations

import argparse
import copy
import gzip
import lzma
import math
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from measure.record import archive
from measure.record.io import load_record, stored_bytes
from measure.record.pack import compress, pack
from measure.record.sample_codec import DIFFS, SHAPE, UNIT, VALUES, _read_text
from measure.record.tree import record_paths
from measure.writing import json_text

ROOT = Path(__file__).resolve().parent.parent


def _redeal(group: dict[str, Any], rng: np.random.Generator, drift: float, digits: int) -> None:
    """Every sample field of one case (or one tier's call costs) drifted, each row's repeats re-dealt."""
    arrays = {
        k: np.asarray(v, dtype=float)
        for k, v in group.items()
        if k.endswith("_s") and isinstance(v, list) and v and isinstance(v[0], list)
    }
    if not arrays:
        return
    shape = max((a.shape for a in arrays.values()), key=len)
    order = np.argsort(rng.random(shape), axis=0)  # one random order of the repeats per row
    for k, a in arrays.items():
        moved = np.take_along_axis(a, order, axis=0) if a.shape == shape else a
        group[k] = np.round(moved * drift, digits).tolist()


def copies(doc: dict[str, Any], n: int, independent: bool) -> list[bytes]:
    """``n`` records of one machine and month, as ``measure run`` stores them (packed JSON, before gzip)."""
    rng, drifts = np.random.default_rng(20261205), random.Random(20261205)
    digits = round(-math.log10((doc.get("wallclock") or {}).get("resolution_s", 1e-9)))
    out = []
    for i in range(n):
        d = copy.deepcopy(doc)
        wallclock = d.get("wallclock") or {}
        groups = list(wallclock.get("cases", {}).values())
        if independent:
            groups += list((wallclock.get("call_costs") or {}).get("tiers", {}).values())
        for group in groups:
            drift = drifts.lognormvariate(0, 0.05)
            if independent:
                _redeal(group, rng, drift, digits)
                continue
            for k, v in group.items():  # as bench_site.py's copies
                if k.endswith("_s") and isinstance(v, list) and v and isinstance(v[0], list):
                    group[k] = [[round(x * drift, digits) for x in rep] for rep in v]
        d["run_id"] = f"20260901T{i // 60:04d}{i % 60:02d}Z-{i:06x}"
        d["started_at"] = f"2026-09-01T{i // 60 % 24:02d}:{i % 60:02d}:00Z"
        out.append(stored_bytes(d, Path(f"{d['run_id']}.json")))
    return out


def month_archive(records: list[bytes], folder: Path) -> tuple[Path, int, int]:
    """The records as one month archive (:mod:`measure.record.archive`, what ``measure archive`` writes), with
    the number of distinct parts it keeps and of parts in all."""
    members = {f"20260901T{i // 60:04d}{i % 60:02d}Z-{i:06x}.json": r for i, r in enumerate(records)}
    cut = [archive.parts(r.decode("utf-8")) for r in records]
    path = archive.write_archive(folder / f"2026-09{archive.SUFFIX}", members)
    return path, len({p for c in cut for p in c}), sum(map(len, cut))


def stored_integers(node: Any, out: list[np.ndarray]) -> Any:
    """``node`` (a packed wall-clock part) with each field's stored integers moved to ``out`` (its text left empty)."""
    if isinstance(node, list):
        return [stored_integers(v, out) for v in node]
    if not isinstance(node, dict):
        return node
    if UNIT in node:
        key = DIFFS if DIFFS in node else VALUES
        ints = _read_text(key, node[key], node[SHAPE])  # as measure reads them
        out.append(ints.reshape(len(ints) if key == DIFFS else 1, -1))  # repeats down, or one row
        return {**node, key: ""}
    return {k: stored_integers(v, out) for k, v in node.items()}


def bit_lengths(ints: np.ndarray) -> np.ndarray:
    """Each integer's bit length after zigzag (0 -> 0, -1 -> 1, 1 -> 2, ...): 0 for 0, else 1 + floor(log2)."""
    zigzag = np.where(ints >= 0, 2 * ints, -2 * ints - 1).astype(np.uint64)
    return np.where(zigzag > 0, np.floor(np.log2(np.maximum(zigzag, 1).astype(float))).astype(np.int64) + 1, 0)


def adaptive_bits(fields: list[np.ndarray]) -> float:
    """Bits an adaptive arithmetic code spends on the integers: each field's bit lengths by counts that start
    flat and learn as it goes (the first repeat, whole values, apart from the differences after it), then each
    number's bits below its leading one as they are. An arithmetic coder writes this within a few bytes."""
    bits = 0.0
    for ints in fields:
        lengths = bit_lengths(ints)
        for part in (lengths[:1], lengths[1:]):
            counts, total = [0.5] * 65, 0.5 * 65
            for n in part.ravel().tolist():
                bits -= math.log2(counts[n] / total)
                counts[n] += 1
                total += 1
        bits += float(np.maximum(lengths - 1, 0).sum())
    return bits


def entropy_bits(fields: list[np.ndarray]) -> float:
    """Each field's integers by their empirical order-0 entropy (first repeat apart): optimistic, since it
    counts no table of the values it codes."""
    bits = 0.0
    for ints in fields:
        for part in (ints[:1], ints[1:]):
            if part.size:
                _, counts = np.unique(part, return_counts=True)
                bits -= float((counts * np.log2(counts / counts.sum())).sum())
    return bits


def least_form(doc: dict[str, Any]) -> None:
    """What the record takes as stored, against the least a lossless form of it could take."""
    fields: list[np.ndarray] = []
    packed = pack(doc)
    rest = dict(packed, wallclock=stored_integers(packed.get("wallclock"), fields))
    rest_text = json_text(rest, "the record without its samples").encode("utf-8")
    n = sum(f.size for f in fields)
    samples, entropy = adaptive_bits(fields) / 8e3, entropy_bits(fields) / 8e3
    rest_gz, rest_xz = len(compress(rest_text)) / 1e3, len(lzma.compress(rest_text, preset=9)) / 1e3
    stored = len(stored_bytes(doc, Path("record.json.gz"))) / 1e3
    print(f"\nthe record as stored: {stored:.1f} kB; its {n:,} sample integers and the rest:")
    print(f"  samples: adaptive arithmetic code {samples:.1f} kB; empirical entropy {entropy:.1f} kB (optimistic)")
    print(f"  the rest: {rest_gz:.1f} kB gzipped, {rest_xz:.1f} kB under xz")
    least = f"{samples + rest_xz:.1f} kB by a coder of the samples; {entropy + rest_xz:.1f} kB at entropy"
    print(f"  least record: {least}")
    for step in (2, 5, 10, 20):
        print(
            f"  samples at {step} us (the stored integers rounded):"
            f" coder {adaptive_bits(coarser(fields, step)) / 8e3:.1f} kB"
        )


def coarser(fields: list[np.ndarray], step: int) -> list[np.ndarray]:
    """The stored integers as they would be at ``step`` times the resolution: each field's values (repeats after
    the first are differences) rounded to the step, then differenced again. A field stored against others is
    rounded as stored (its difference from them), so this estimates what a coarser run would store."""
    out = []
    for ints in fields:
        values = np.floor_divide(np.cumsum(ints, axis=0) + step // 2, step)
        out.append(np.concatenate([values[:1], np.diff(values, axis=0)]))
    return out


def _zigzag(v: int) -> int:
    return 2 * v if v >= 0 else -2 * v - 1


def _signless(ints: np.ndarray) -> str:
    """Decimal digits, each number's last digit a letter (a-j, k-t when negative): no spaces, no signs."""
    out = []
    for v in ints.ravel().tolist():
        digits = str(abs(v))
        out.append(digits[:-1] + chr((97 if v >= 0 else 107) + int(digits[-1])))
    return "".join(out)


PRINTABLE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) not in '"\\')
"""The 93 characters a JSON string holds unescaped."""


def _radix(ints: np.ndarray, last: int = 80) -> str:
    """Each number zigzagged, its lowest digit in base ``last`` (a character of its own), the rest in base
    93 - ``last`` before it: one character for most differences, no separators."""
    rest = len(PRINTABLE) - last
    out = []
    for v in ints.ravel().tolist():
        z = _zigzag(v)
        text, z = PRINTABLE[z % last], z // last
        while z:
            text, z = PRINTABLE[last + z % rest] + text, z // rest
        out.append(text)
    return "".join(out)


def text_codes(doc: dict[str, Any]) -> None:
    """The whole record gzipped with its stored integers written in other text codes: what the least form a
    gzipped JSON record could take is, short of an arithmetic coder of its own."""

    def recoded(node: Any, code: Any) -> Any:
        if isinstance(node, list):
            return [recoded(v, code) for v in node]
        if not isinstance(node, dict):
            return node
        if UNIT in node:
            key = DIFFS if DIFFS in node else VALUES
            return {**node, key: code(_read_text(key, node[key], node[SHAPE]))}
        return {k: recoded(v, code) for k, v in node.items()}

    packed = pack(doc)
    print("\nthe record gzipped with its sample integers in other text codes:")
    for name, code in (
        ("decimal, one space apart (as stored)", None),
        ("signless digits", _signless),
        ("radix 80/13, zigzagged", _radix),
    ):
        form = packed if code is None else dict(packed, wallclock=recoded(packed["wallclock"], code))
        print(f"  {name:<40}{len(compress(json_text(form, 'x').encode('utf-8'))) / 1e3:>8.1f} kB")


def by_section(doc: dict[str, Any], depth: int = 2, least_kb: float = 2.0) -> None:
    """What each part of the stored record takes: its packed JSON text, and that text gzipped alone (a part's
    share of the whole gzip is close to it), the parts of the largest ones beneath them."""
    packed = pack(doc)

    def kb(value: Any) -> tuple[float, float]:
        text = json_text(value, "a part").encode("utf-8")
        return len(text) / 1e3, len(compress(text)) / 1e3

    def show(node: dict[str, Any], level: int, prefix: str) -> None:
        rows = sorted(((k, *kb(v)) for k, v in node.items()), key=lambda r: -r[2])
        for key, plain, gz in rows:
            if gz < least_kb and level:
                continue
            print(f"  {prefix + key:<48}{plain:>10.1f}{gz:>10.1f}")
            if level + 1 < depth and isinstance(node[key], dict):
                show(node[key], level + 1, prefix + key + "/")

    print(f"\nthe stored record by part (parts under {least_kb} kB gzipped left out below the top level):")
    print(f"  {'part':<48}{'text kB':>10}{'gzip kB':>10}")
    show(packed, 0, "")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, default=None)
    ap.add_argument("--records", type=int, default=100, help="records in the month (default 100)")
    ap.add_argument("--depth", type=int, default=3, help="levels of parts to list by size (default 3)")
    args = ap.parse_args()
    record = args.record or (record_paths(ROOT / "results") or [None])[-1]
    if record is None:
        sys.exit("no record: run `measure run` first or pass --record")
    doc = load_record(Path(record))
    print(f"record {record}; {args.records} copies as one machine's month")
    print(f"{'copies':<12}{'.json.gz kB':>12}{'read ms':>9}{'archive kB':>11}{'read ms':>9}{'parts':>10}")
    for independent in (False, True):
        records = copies(doc, args.records, independent)
        singles = [compress(r) for r in records]
        t = time.perf_counter()
        back = [gzip.decompress(s) for s in singles]
        single_ms = (time.perf_counter() - t) / len(records) * 1e3
        with tempfile.TemporaryDirectory() as tmp:
            path, distinct, total = month_archive(records, Path(tmp))
            packed = path.read_bytes()
            t = time.perf_counter()
            unpacked = list(archive.read_archive(path).values())
            pack_ms = (time.perf_counter() - t) / len(records) * 1e3
        if back != records or unpacked != records:
            sys.exit("a record did not come back byte for byte")
        per = sum(map(len, singles)) / len(records) / 1e3
        print(
            f"{'independent' if independent else 'drift':<12}{per:>12.1f}{single_ms:>9.2f}"
            f"{len(packed) / len(records) / 1e3:>11.1f}{pack_ms:>9.2f}{f'{distinct}/{total}':>10}"
        )
    least_form(doc)
    text_codes(doc)
    by_section(doc, args.depth)


if __name__ == "__main__":
    main()
