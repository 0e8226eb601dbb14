"""From a migrated, schema-valid document to the typed record: the only reader of raw record keys."""

from __future__ import annotations

from typing import Any

import numpy as np

from measure.policy import policy_from
from measure.record.model.framing import (
    Acceptance,
    Block,
    Counts,
    Differing,
    Divergence,
    Execution,
    Framing,
    FramingTier,
    LayerDiff,
    Leg,
    LegTiming,
    Miss,
    Quality,
)
from measure.record.model.instructions import Instructions, instruction_tier
from measure.record.model.run import (
    Config,
    Environment,
    FileEntry,
    FramingSettings,
    Git,
    Golden,
    Machine,
    Pairing,
    Record,
    TierEntry,
    WallclockSettings,
)
from measure.record.model.wallclock import (
    CallTimings,
    Case,
    LayoutPair,
    LayoutVariant,
    Profile,
    ThreadSweep,
    TierCalls,
    Wallclock,
    WorkerSamples,
)


def _array(rows: list[list[float]]) -> np.ndarray:
    a = np.asarray(rows, dtype=float)
    if a.ndim != 2:
        a = a.reshape(len(rows), -1)
    a.flags.writeable = False
    return a


def _ints(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values or ())


def _case(name: str, c: dict[str, Any]) -> Case:
    spec = c["kind"] == "speculative"
    return Case(
        name=name,
        kind=c["kind"],
        tokens=_ints(c["tokens"]),
        calls=_ints(c.get("calls")),
        outputs_stable=bool(c.get("outputs_stable", True)),
        wall_s=_array(c["wall_s"]),
        run_s=_array(c["run_s"]),
        cpu_s=_array(c["cpu_s"]) if "cpu_s" in c else None,
        tokenize_s=_array(c["tokenize_s"]) if "tokenize_s" in c else None,
        tier=c.get("tier"),
        pair=c.get("pair"),
        drafter=c.get("drafter"),
        verifier=c.get("verifier"),
        k=c.get("k"),
        proposed=_ints(c.get("proposed")),
        accepted=_ints(c.get("accepted")),
        rounds=_ints(c.get("rounds")),
        bonus=_ints(c.get("bonus")),
        drafter_calls=_ints(c.get("drafter_calls")),
        verifier_calls=_ints(c.get("verifier_calls")),
        proposed_by_position=_ints(c.get("proposed_by_position")),
        accepted_by_position=_ints(c.get("accepted_by_position")),
        drafter_run_s=_array(c["drafter_run_s"]) if spec and "drafter_run_s" in c else None,
        verifier_run_s=_array(c["verifier_run_s"]) if spec and "verifier_run_s" in c else None,
        first_token_s=_array(c["first_token_s"]) if c.get("first_token_s") else None,
    )


def _vector(values: Any) -> np.ndarray:
    a = np.asarray(values or [], dtype=float)
    a.flags.writeable = False
    return a


def _profile(p: dict[str, Any] | None) -> Profile | None:
    if not p:
        return None
    memory, baseline, sweep = p.get("memory") or {}, p.get("baseline") or {}, p.get("threads")
    threads = None
    if sweep:
        threads = {
            name: ThreadSweep(
                tokens=_ints(t["tokens"]),
                wall_s={int(r["intra_op_threads"]): _array(r["wall_s"]) for r in t["runs"]},
                fastest=int(t["fastest"]),
            )
            for name, t in sweep["tiers"].items()
        }
    return Profile(
        workers=int(p.get("workers", 0)),
        warm_loads=int(p.get("warm_loads", 0)),
        rows=int(p.get("rows", 0)),
        memory_source=memory.get("source"),
        memory_unit_bytes=memory.get("unit_bytes"),
        platform=memory.get("platform"),
        baseline_imports=baseline.get("imports", ""),
        baseline_peak_rss_bytes=_vector(baseline.get("peak_rss_bytes")),
        tiers={
            name: WorkerSamples(_vector(t["load_cold_s"]), _vector(t["load_warm_s"]), _vector(t["peak_rss_bytes"]))
            for name, t in (p.get("tiers") or {}).items()
        },
        thread_counts=_ints(sweep["counts"]) if sweep else (),
        threads=threads,
    )


def _table(rows: list[list[float]], width: int) -> np.ndarray:
    """Repeats x ``width`` samples; zero repeats (a run stopped before the first) gives an empty table."""
    if not rows:
        a = np.zeros((0, width))
        a.flags.writeable = False
        return a
    return _array(rows)


def _cube(values: list[list[list[float]]], widths: int, rows: int) -> np.ndarray:
    """Repeats x widths x rows, read-only; zero repeats give an empty cube of the right shape."""
    a = np.asarray(values, dtype=float).reshape(len(values), widths, rows)
    a.flags.writeable = False
    return a


def _call_costs(c: dict[str, Any] | None) -> CallTimings | None:
    if not c:
        return None
    return CallTimings(
        rows=int(c["rows"]),
        repeats=int(c["repeats"]),
        fresh_sessions=c.get("fresh_sessions"),
        tiers={
            name: TierCalls(_ints(t["n"]), _ints(t["cache_tokens"]), _cube(t["call_s"], len(t["n"]), int(c["rows"])))
            for name, t in c["tiers"].items()
        },
    )


def _layout_variant(v: dict[str, Any]) -> LayoutVariant:
    return LayoutVariant(
        v["path"],
        v["layout"],
        _ints(v["tokens"]),
        _ints(v["calls"]),
        _table(v["wall_s"], len(v["tokens"])),
        _table(v["run_s"], len(v["tokens"])),
    )


def _layouts(found: dict[str, Any] | None) -> tuple[LayoutPair, ...]:
    return tuple(
        LayoutPair(name, bool(x["same_outputs"]), _layout_variant(x["merged"]), _layout_variant(x["split"]))
        for name, x in (found or {}).items()
    )


def _block(b: dict[str, Any]) -> Block:
    return Block(
        block=b["block"],
        present_max_abs_diff=float(b["present_max_abs_diff"]),
        logits_max_abs_diff=float(b["logits_max_abs_diff"]),
        argmax_agree=int(b["argmax_agree"]),
        argmax_total=int(b["argmax_total"]),
        first_divergent_step=tuple(b["first_divergent_step"]),
        layers=tuple(
            LayerDiff(
                int(x["layer"]),
                float(x.get("key_mean_abs_diff", 0.0)),
                float(x.get("value_mean_abs_diff", 0.0)),
                float(x.get("key_max_abs_diff", 0.0)),
                float(x.get("value_max_abs_diff", 0.0)),
            )
            for x in b.get("layers", ())
        ),
    )


def _quality(q: dict[str, Any] | None) -> Quality | None:
    if q is None:
        return None
    misses = tuple(Miss(int(m["line"]), m["input"], m["expected"], m["output"]) for m in q.get("misses", ()))
    return Quality(int(q["rows"]), int(q["exact"]), float(q["cer_mean"]), misses)


def _framing_tier(t: dict[str, Any]) -> FramingTier:
    ids = t.get("output_ids")
    return FramingTier(
        tier=t["tier"],
        precision=t.get("precision", "?"),
        status=t.get("status", "measured"),
        reason=t.get("reason", ""),
        blocks=tuple(_block(b) for b in t.get("blocks", ())),
        outputs=tuple(t.get("outputs", ())),
        output_ids=None if ids is None else tuple(tuple(row) for row in ids),
        quality=_quality(t.get("quality")),
        divergence=tuple(_divergence(d) for d in t.get("divergence", ())),
        timing=_leg_timing(t.get("timing")),
    )


def _divergence(d: dict[str, Any]) -> Divergence:
    python = d.get("python_margin")
    return Divergence(
        row=int(d["row"]),
        line=d.get("line"),
        step=int(d["step"]),
        token=int(d["token"]),
        expected=int(d["expected"]),
        margin=float(d["margin"]),
        python_margin=None if python is None else float(python),
    )


def _leg_timing(t: dict[str, Any] | None) -> LegTiming | None:
    if not t:
        return None
    return LegTiming(tuple(float(ms) for ms in t["greedy_ms"]), int(t["tokens"]))


def _execution(e: dict[str, Any] | None) -> Execution | None:
    if not e:
        return None
    return Execution(
        provider=e["provider"],
        threads=int(e["threads"]),
        threads_requested=e.get("threads_requested"),
        cross_origin_isolated=bool(e["cross_origin_isolated"]),
        simd=bool(e["simd"]),
        hardware_concurrency=e.get("hardware_concurrency"),
    )


def _acceptance(a: dict[str, Any]) -> Acceptance:
    return Acceptance(
        drafter=a["drafter"],
        verifier=a["verifier"],
        self_pair=bool(a["self"]),
        k=int(a["k"]),
        probe=Counts(int(a["probe"]["accepted"]), int(a["probe"]["proposed"])),
        runtime=Counts(int(a["runtime"]["accepted"]), int(a["runtime"]["proposed"])),
        rows=int(a["rows"]),
        preserved=int(a["preserved"]),
        differing=tuple(Differing(int(d["line"]), d["input"], d["speculative"], d["greedy"]) for d in a["differing"]),
    )


def _framing(fr: dict[str, Any] | None) -> Framing | None:
    if not fr:
        return None
    legs = tuple(
        Leg(
            runtime=leg["runtime"],
            language=leg["language"],
            version=leg.get("version"),
            host=leg.get("host"),
            status=leg["status"],
            reason=leg.get("reason", ""),
            tiers=tuple(_framing_tier(t) for t in leg.get("tiers", ())),
            execution=_execution(leg.get("execution")),
        )
        for leg in fr.get("legs", ())
    )
    return Framing(tuple(fr.get("blocks", ())), legs, tuple(_acceptance(a) for a in fr.get("acceptance", ())))


def _config(cfg: dict[str, Any]) -> Config:
    wc, fr = cfg.get("wallclock") or {}, cfg.get("framing") or {}
    return Config(
        path=cfg.get("path"),
        wallclock=WallclockSettings(
            warmup=int(wc.get("warmup", 1)),
            warmup_s=float(wc.get("warmup_s", 0.0)),
            repeats=int(wc.get("repeats", 0)),
            fresh_sessions=bool(wc.get("fresh_sessions", False)),
            k=_ints(wc.get("k")),
            bootstrap=int(wc.get("bootstrap", 2000)),
            seed=int(wc.get("seed", 0)),
        ),
        framing=FramingSettings(
            k=_ints(fr.get("k")),
            whole_prefix=bool(fr.get("whole_prefix", True)),
            probe_k=int(fr.get("probe_k", 4)),
            node_leg=bool(fr.get("node_leg", False)),
        ),
        session=dict(cfg.get("session") or {}),
        policy=policy_from(cfg.get("policy")),
        pairs=tuple((p["drafter"], p["verifier"]) for p in cfg.get("pairs", ())),
        raw=cfg,
    )


def _environment(env: dict[str, Any]) -> Environment:
    m, git = env["machine"], env["git"]
    return Environment(
        machine=Machine(
            cpu=m["cpu"],
            arch=m["arch"],
            cores=int(m["cores"]),
            memory_bytes=m.get("memory_bytes"),
            os=m["os"],
            platform=m.get("platform", m["os"]),
        ),
        python=env["python"],
        onnxruntime=env["onnxruntime"],
        providers=tuple(env.get("onnxruntime_providers", ())),
        numpy=env.get("numpy", "?"),
        tokenizers=env.get("tokenizers"),
        git=Git(git.get("commit"), git.get("dirty")),
        command=tuple(env.get("command", ())),
    )


def _tier(name: str, t: dict[str, Any]) -> TierEntry:
    fp = t["fingerprint"]
    return TierEntry(
        name=name,
        role=t["role"],
        path=t.get("path", ""),
        layout=fp.get("layout", "?"),
        precision=fp["precision"],
        layers=int(fp.get("layers", 0)),
        vocab_size=fp.get("vocab_size"),
        total_bytes=int(fp.get("total_bytes", sum(f["bytes"] for f in fp["files"]))),
        files=tuple(FileEntry(f["name"], int(f["bytes"]), f["sha256"]) for f in fp["files"]),
    )


def _pairing(p: dict[str, Any] | None) -> Pairing | None:
    if not p:
        return None
    first = {case: tuple(bool(b) for b in flags) for case, flags in (p.get("base_first") or {}).items()}
    return Pairing(p["id"], p["side"], p["partner_run_id"], p["order"], first)


def _instructions(d: dict[str, Any] | None) -> Instructions | None:
    if not d:
        return None
    return Instructions(
        tool=d["tool"],
        valgrind=d["valgrind"],
        rows=int(d["rows"]),
        runs=int(d["runs"]),
        tiers={n: instruction_tier(n, int(t["tokens"]), _ints(t["instructions"])) for n, t in d["tiers"].items()},
    )


def from_document(doc: dict[str, Any], source: str) -> Record:
    """A migrated, schema-valid document as a :class:`Record` (the schema guarantees the required keys)."""
    wc = doc.get("wallclock")
    wallclock = None
    if wc:
        wallclock = Wallclock(
            warmup=int(wc.get("warmup", 0)),
            repeats=int(wc.get("repeats", 0)),
            repeats_done=int(wc.get("repeats_done", 0)),
            fresh_sessions=wc.get("fresh_sessions"),
            cases={name: _case(name, c) for name, c in wc.get("cases", {}).items()},
            profile=_profile(wc.get("profile")),
            call_costs=_call_costs(wc.get("call_costs")),
            layouts=_layouts(wc.get("layouts")),
            timed=str(wc.get("timed", "text")),
        )
    g = doc["golden"]
    return Record(
        source=source,
        schema_version=int(doc["schema_version"]),
        tool_version=doc["tool"]["version"],
        run_id=doc["run_id"],
        machine_id=doc["machine_id"],
        started_at=doc["started_at"],
        finished_at=doc.get("finished_at"),
        complete=bool(doc["complete"]),
        error=doc.get("error"),
        suites=tuple(doc.get("suites", ())),
        environment=_environment(doc["environment"]),
        config=_config(doc["config"]),
        golden=Golden(str(g["path"]), g["sha256"], int(g["rows"])),
        tiers={name: _tier(name, t) for name, t in doc["tiers"].items()},
        wallclock=wallclock,
        framing=_framing(doc.get("framing")),
        test_slowdown_factor=doc.get("test_slowdown_factor"),
        pairing=_pairing(doc.get("pairing")),
        instructions=_instructions(doc.get("instructions")),
    )
