"""From a migrated, schema-valid document to the typed record: the only reader of raw record keys.

The run's own facts (environment, config, tiers, pairing) are read here; each section's class reads its own
(:meth:`~measure.record.model.wallclock.Wallclock.from_dict`,
:meth:`~measure.record.model.framing.Framing.from_dict`, ...).
"""

from __future__ import annotations

from typing import Any

from measure.policy import policy_from
from measure.record.model.bandwidth import traffic_of
from measure.record.model.convert import ints
from measure.record.model.explore import explore_of
from measure.record.model.fidelity import Fidelity
from measure.record.model.framing import Framing
from measure.record.model.instructions import Instructions
from measure.record.model.plan import RunPlan, nbits_of
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
from measure.record.model.wallclock import Wallclock


def _config(cfg: dict[str, Any]) -> Config:
    wc, fr = cfg.get("wallclock") or {}, cfg.get("framing") or {}
    return Config(
        path=cfg.get("path"),
        wallclock=WallclockSettings(
            warmup=int(wc.get("warmup", 1)),
            warmup_s=float(wc.get("warmup_s", 0.0)),
            repeats=int(wc.get("repeats", 0)),
            fresh_sessions=bool(wc.get("fresh_sessions", False)),
            k=ints(wc.get("k")),
            bootstrap=int(wc.get("bootstrap", 2000)),
            seed=int(wc.get("seed", 0)),
        ),
        framing=FramingSettings(
            k=ints(fr.get("k")),
            whole_prefix=bool(fr.get("whole_prefix", True)),
            probe_k=int(fr.get("probe_k", 4)),
            node_leg=bool(fr.get("node_leg", False)),
            genai_leg=bool(fr.get("genai_leg", False)),
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
        kind=t.get("kind", "seq2seq"),  # absent only before v3, which measured encoder-decoder tiers alone
        prompt=t.get("prompt"),
        nbits=nbits_of(fp),
        max_new_tokens=(t.get("decode_limit") or {}).get("max_new_tokens"),
        max_new_tokens_from=(t.get("decode_limit") or {}).get("from"),
        traffic=traffic_of(t.get("traffic")),
        model=t.get("model"),
    )


def _pairing(p: dict[str, Any] | None) -> Pairing | None:
    if not p:
        return None
    first = {case: tuple(bool(b) for b in flags) for case, flags in (p.get("base_first") or {}).items()}
    return Pairing(p["id"], p["side"], p["partner_run_id"], p["order"], first)


def from_document(doc: dict[str, Any], source: str) -> Record:
    """A migrated, schema-valid document as a :class:`Record` (the schema guarantees the required keys)."""
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
        wallclock=Wallclock.from_dict(doc.get("wallclock")),
        framing=Framing.from_dict(doc.get("framing")),
        test_slowdown_factor=doc.get("test_slowdown_factor"),
        pairing=_pairing(doc.get("pairing")),
        instructions=Instructions.from_dict(doc.get("instructions")),
        fidelity=Fidelity.from_dict(doc.get("fidelity")),
        plan=RunPlan.from_dict(doc.get("plan")),
        explore=explore_of(doc.get("explore")),
    )
