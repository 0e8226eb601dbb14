"""Decode-engine benchmark on the bundled demo: prints figures, asserts nothing.

For each case, over the golden rows, warm sessions, repeats interleaved across
cases (A B C A B C ...) so machine drift hits all alike:

* ms per output token (median over repeats of total wall / total tokens);
* the share of wall time inside ``session.run`` (harness overhead = the rest;
  targets: <= 3% on base-int8, <= 5% on the small tiers and in speculative rounds);
  the timed region is measure's: token ids in -> ids out (``greedy_ids``, ``decode_ids``);
  tokenizing (source encode + output decode to text) is timed on its own per row, as the
  wall-clock suite records it, and the overhead the old region (text in) would show is printed beside;
  "inside" is timed just around onnxruntime's C++ run, past the Python wrapper's
  per-call checks (``public run`` rows time the wrapper inside, as measure did before);
* where each row's outside time goes: before the first call (tokenizing), between the
  encoders and the first decoder call, between decoder calls, after the last call;
* the fitted exponent b of per-row time ~ T^b against output length T
  (target <= 1.15, i.e. O(T)); the uncached reference decode is fitted too, as
  the O(T^2)-shaped contrast;
* speculative decoding (lite int4 drafter -> plain int8 verifier) for k = 2, 4, 8;
* the merged layout (one ``If`` graph) against the split optimum layout on the same weights;
* ``floor`` rows: the leanest Python loop over the same sessions and calls, the bound no Python
  harness gets under on this machine (freeing the outputs onnxruntime returns, the argmax, the
  trace entry), so measure's overhead is read against what is possible, not against zero.

``before`` cases run the decode loop as it was before issue 18 (a feeds dict and
an id array built per call, every output fetched, a cache object per call) on the
same sessions, side by side with the current loop, so the gain is measured in one
run. Then, from direct timing: the cost of one verifier call of n tokens against a
single step (n = 1, 2, 3, 5, 9) per tier, and the speculative speedup predicted from
those measured costs (:mod:`measure.analysis.speedup`) beside Leviathan et al.'s, with each
k's efficiency = observed / measured-cost prediction.

Run: ``python benchmarks/bench_decode.py [--repeats N]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from time import perf_counter

import numpy as np

from measure import bundled
from measure.analysis.speedup import CallCostInputs, fit_batch_cost, predict
from measure.engine.load import load_tier
from measure.engine.result import Decoded, finish
from measure.engine.seq2seq.kvcache import KVCache
from measure.engine.seq2seq.layouts import MergedDecoder, OptimumDecoder, SimpleDecoder
from measure.engine.session import TimedSession, Trace
from measure.engine.speculative import Pair, Round, SpeculativeDecoded
from measure.engine.tier import Tier
from measure.suites.golden import load_golden

DEMO = bundled.GOLDEN.parent
BATCH_NS = (1, 2, 3, 5, 9)
ENCODERS = (".encoder", ".encoder_model")  # the encoder graph's call label in each layout


class _IdsTrace(Trace):
    """A trace made after tokenizing (the timed region starts at ids), with the tokenizing timed beside it."""

    def __init__(self, encode_s: float) -> None:
        super().__init__()
        self.encode_s = encode_s
        self.detokenize_s = 0.0

    @property
    def tokenize_s(self) -> float:
        return self.encode_s + self.detokenize_s


# --- the loop before issue 18, kept here to be timed beside the current one -------------------------------------


class _BeforeTrace(Trace):
    """Trace as it was: three appends and a mark per call."""

    def __init__(self) -> None:
        super().__init__()
        self.b_labels: list[str] = []
        self.b_inside: list[float] = []
        self.b_outside: list[float] = []
        self.mark = self.started


def _before_run(session: TimedSession, feeds: dict, trace: _BeforeTrace, names: list[str] | None = None) -> list:
    if session.recorded is not None:
        session.recorded.append({k: np.array(v, copy=True) for k, v in feeds.items()})
    start = perf_counter()
    out = session.session.run(names or session.output_names, feeds)
    end = perf_counter()
    if session.after_run:
        pass
    trace.b_labels.append(session.label)
    trace.b_inside.append(end - start)
    trace.b_outside.append(start - trace.mark)
    trace.mark = end
    trace.log.append((session.label, start, end))  # the same figures, read back the same way
    return out


def _before_feed(dec, cache: KVCache, tokens: list[int], trace: _BeforeTrace) -> tuple[np.ndarray, KVCache]:
    if isinstance(dec, SimpleDecoder):
        feeds = dict(zip(dec.past_names, cache.self_kv, strict=True))
        feeds["input_ids"] = np.array([tokens], dtype=dec.ids_dtype)
        feeds.update(cache.cross)
        out = _before_run(dec.session, feeds, trace)
        return out[0][0], KVCache(tuple(out[1:]), cache.cross, cache.length + len(tokens))
    n = dec.names
    if isinstance(dec, OptimumDecoder):
        ids = np.asarray([tokens], dtype=dec.ids_dtype)
        if cache.length == 0:
            hidden, mask = cache.cross[0], cache.cross[1]
            feeds = {"input_ids": ids, "encoder_attention_mask": mask, "encoder_hidden_states": hidden}
            out = _before_run(dec.first, feeds, trace)
            half = 1 + len(n.present_self)
            return out[0][0], KVCache(tuple(out[1:half]), (*out[half:], mask), len(tokens))
        feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
        feeds.update(zip(n.past_cross, cache.cross[:-1], strict=True))
        feeds["input_ids"] = ids
        feeds["encoder_attention_mask"] = cache.cross[-1]
        out = _before_run(dec.with_past, feeds, trace)
        return out[0][0], KVCache(tuple(out[1:]), cache.cross, cache.length + len(tokens))
    assert isinstance(dec, MergedDecoder)
    layers2 = 2 * n.layers
    feeds = dict(zip(n.past_self, cache.self_kv, strict=True))
    feeds.update(zip(n.past_cross, cache.cross[:layers2], strict=True))
    feeds["input_ids"] = np.asarray([tokens], dtype=dec.ids_dtype)
    feeds["encoder_hidden_states"] = cache.cross[layers2]
    feeds["encoder_attention_mask"] = cache.cross[layers2 + 1]
    feeds["use_cache_branch"] = dec._cache if cache.length else dec._no_cache
    out = _before_run(dec.session, feeds, trace, ["logits", *n.present_self, *n.present_cross])
    half = 1 + layers2
    cross = cache.cross if cache.length else (*out[half:], *cache.cross[layers2:])
    return out[0][0], KVCache(tuple(out[1:half]), cross, cache.length + len(tokens))


def _before_start(tier: Tier, ids: list[int], trace: _BeforeTrace) -> KVCache:
    enc, dec = tier.encoder, tier.decoder
    arr = np.asarray([ids], dtype=enc.ids_dtype)
    mask = np.ones_like(arr, dtype=enc.mask_dtype or np.int64)
    feeds = {"input_ids": arr}
    if enc.mask_dtype is not None:
        feeds["attention_mask"] = mask
    (hidden,) = _before_run(enc.session, feeds, trace)
    s = dec.shape
    zero = np.zeros((1, s.heads, 0, s.head_dim), dtype=s.kv_dtype)
    if isinstance(dec, SimpleDecoder):
        fixed = {"encoder_hidden_states": hidden} | ({"encoder_attention_mask": mask} if dec.with_mask else {})
        return KVCache((zero,) * (2 * s.layers), fixed, 0)
    if isinstance(dec, OptimumDecoder):
        return KVCache((), (hidden, mask), 0)
    return KVCache((zero,) * (2 * s.layers), ((zero,) * (2 * s.layers)) + (hidden, mask), 0)


def before_greedy(tier: Tier, text: str, trace: _BeforeTrace) -> Decoded:
    ids = tier.source_ids(text)
    limit = tier.default_max_new_tokens(len(ids))
    eos = tier.special.eos
    cache = _before_start(tier, ids, trace)
    token = tier.special.decoder_start
    out: list[int] = []
    dec = tier.decoder
    stopped = "max_new_tokens"
    while len(out) < limit:
        logits, cache = _before_feed(dec, cache, [token], trace)
        token = int(logits[-1].argmax())
        if token == eos:
            stopped = "eos"
            break
        out.append(token)
    wall = max(0.0, perf_counter() - trace.started)
    return Decoded(tier.tokenizer.decode(out), tuple(out), stopped, wall, trace.calls(), trace.run_s())


def before_speculative(pair: Pair, text: str, k: int, trace: _BeforeTrace) -> SpeculativeDecoded:
    d, v = pair.drafter, pair.verifier
    ids = v.source_ids(text)
    limit = v.default_max_new_tokens(len(ids))
    eos = v.special.eos
    v_cache = _before_start(v, ids, trace)
    d_cache = _before_start(d, ids, trace)
    seq = [v.special.decoder_start]
    rounds: list[Round] = []
    d_calls = v_calls = 0
    stopped = "max_new_tokens"
    while len(seq) - 1 < limit:
        budget = min(k, limit - (len(seq) - 1) - 1)
        drafts: list[int] = []
        if budget > 0:
            logits = None
            for token in seq[d_cache.length :]:
                logits, d_cache = _before_feed(d.decoder, d_cache, [token], trace)
                d_calls += 1
            while True:
                draft = int(np.argmax(logits[-1]))
                drafts.append(draft)
                if draft == eos or len(drafts) == budget:
                    break
                logits, d_cache = _before_feed(d.decoder, d_cache, [draft], trace)
                d_calls += 1
        base = v_cache.length
        logits, v_cache = _before_feed(v.decoder, v_cache, [seq[-1], *drafts], trace)
        v_calls += 1
        best = np.argmax(logits, axis=-1)
        n = 0
        while n < len(drafts) and drafts[n] == int(best[n]):
            n += 1
        seq.extend(drafts[:n])
        seq.append(int(best[n]))
        rounds.append(Round(proposed=len(drafts), accepted=n, bonus=bool(drafts) and n == len(drafts)))
        v_cache = v_cache.trim(base + 1 + n)
        if drafts:
            d_cache = d_cache.trim(min(d_cache.length, base + 1 + min(n, len(drafts) - 1)))
        if eos in seq[len(seq) - n - 1 :]:
            del seq[seq.index(eos, len(seq) - n - 1) :]
            stopped = "eos"
            break
    del seq[limit + 1 :]
    wall = perf_counter() - trace.started
    return SpeculativeDecoded(
        text=v.tokenizer.decode(seq[1:]),
        tokens=tuple(seq[1:]),
        stopped=stopped,
        wall_s=wall,
        calls=trace.calls(),
        run_s=trace.run_s(),
        rounds=tuple(rounds),
        drafter_calls=d_calls,
        verifier_calls=v_calls,
        drafter_run_s=trace.run_s(d.label + "."),
        verifier_run_s=trace.run_s(v.label + "."),
    )


def iobinding_greedy(tier: Tier, ids: list[int], trace: Trace) -> Decoded:
    """Greedy on the simple layout with onnxruntime IO binding: each call's output OrtValues are bound as the
    next call's inputs, never turned into numpy (only the logits are read). Tried, measured, not used."""
    import onnxruntime as ort

    dec = tier.decoder
    assert isinstance(dec, SimpleDecoder)
    session, label = dec.session.session, dec.session.label
    limit = tier.default_max_new_tokens(len(ids))
    cache = tier.start(ids, trace)
    binding = session.io_binding()
    for name, value in cache.cross.items():
        binding.bind_cpu_input(name, value)
    for name, value in zip(dec.past_names, cache.self_kv, strict=True):
        binding.bind_ortvalue_input(name, ort.OrtValue.ortvalue_from_numpy(value))
    names, token, out = dec.session.output_names, tier.special.decoder_start, []
    stopped = "max_new_tokens"
    while len(out) < limit:
        binding.bind_cpu_input("input_ids", dec._one[token])
        binding.clear_binding_outputs()
        for name in names:  # unallocated outputs: the shapes grow every call
            binding.bind_output(name, "cpu")
        start = perf_counter()
        session.run_with_iobinding(binding)
        end = perf_counter()
        trace.log.append((label, start, end))
        values = binding.get_outputs()
        token = int(values[0].numpy().argmax())
        if token == tier.special.eos:
            stopped = "eos"
            break
        out.append(token)
        for name, value in zip(dec.past_names, values[1:], strict=True):
            binding.bind_ortvalue_input(name, value)
    wall = perf_counter() - trace.started
    return Decoded(tier.tokenizer.decode(out), tuple(out), stopped, wall, trace.calls(), trace.run_s())


def _floor_encoder(tier: Tier, ids: list[int], trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """The encoder call as the floor makes it: the C++ run, one trace entry; its hidden states and mask."""
    enc = tier.encoder
    feeds = {"input_ids": np.array([ids], dtype=enc.ids_dtype), "attention_mask": enc._mask(len(ids))}
    start = perf_counter()
    (hidden,) = enc.session.session._sess.run(enc.session.output_names, feeds, None)
    trace.log.append((enc.session.label, start, perf_counter()))
    return hidden, feeds["attention_mask"]


def floor_greedy(tier: Tier, ids: list[int], trace: Trace) -> Decoded:
    """The least Python any harness can put between the same calls (simple and split optimum layouts).

    onnxruntime's C++ run called directly, one feeds dict refilled in place, the ready id arrays, no
    objects made per call beyond the trace entry, the clock stopped at the last decision as measure
    stops it. Not measure's loop (no layouts, no lanes, no speculative rounds): a yardstick for it.
    """
    dec = tier.decoder
    limit, eos, log = tier.default_max_new_tokens(len(ids)), tier.special.eos, trace.log.append
    hidden, mask = _floor_encoder(tier, ids, trace)
    one, token, out, stopped = dec._one, tier.special.decoder_start, [], "max_new_tokens"
    if isinstance(dec, SimpleDecoder):
        feeds = dec._feeds0.copy()
        feeds["encoder_hidden_states"], feeds["encoder_attention_mask"] = hidden, mask
    else:  # split optimum: the first call to decoder_model, its presents become the with-past feeds
        assert isinstance(dec, OptimumDecoder)
        first = {"input_ids": one[token], "encoder_attention_mask": mask, "encoder_hidden_states": hidden}
        start = perf_counter()
        got = dec.first.session._sess.run(dec.first.output_names, first, None)
        log((dec.first.label, start, perf_counter()))
        token = int(got[0].argmax())
        if token == eos:
            trace.ended = perf_counter()
            return finish(tier, out, "eos", trace)
        out.append(token)
        feeds = dict(zip(dec.names.past_all, got[1:], strict=True))
        feeds["encoder_attention_mask"] = mask
    session = dec.sessions[-1]
    run, names, past, label = session.session._sess.run, dec.steady_names, dec.steady_past, session.label
    while len(out) < limit:
        feeds["input_ids"] = one[token]
        start = perf_counter()
        got = run(names, feeds, None)
        log((label, start, perf_counter()))
        token = int(got[-1].argmax())
        if token == eos:
            stopped = "eos"
            break
        out.append(token)
        feeds.update(zip(past, got, strict=False))
    trace.ended = perf_counter()
    return finish(tier, out, stopped, trace)


def _floor_encode(tier: Tier, ids: list[int], trace: Trace) -> dict[str, np.ndarray]:
    """The encoder call and a simple-layout decoder's start feeds, as :func:`floor_greedy` makes them."""
    dec = tier.decoder
    assert isinstance(dec, SimpleDecoder)
    hidden, mask = _floor_encoder(tier, ids, trace)
    feeds = dec._feeds0.copy()
    feeds["encoder_hidden_states"], feeds["encoder_attention_mask"] = hidden, mask
    return feeds


def floor_speculative(pair: Pair, ids: list[int], k: int, trace: Trace) -> SpeculativeDecoded:
    """measure's speculative rounds (batched verify) with every step inlined: no lanes, no methods called
    between onnxruntime calls, the same calls, argmaxes and cache trims (simple layouts): the bound."""
    d, v = pair.drafter, pair.verifier
    limit, eos, log = v.default_max_new_tokens(len(ids)), v.special.eos, trace.log.append
    vf, df = _floor_encode(v, ids, trace), _floor_encode(d, ids, trace)
    vd, dd = v.decoder, d.decoder
    vrun, vnames, vpast, vlabel = vd.session.session._sess.run, vd.steady_names, vd.steady_past, vd.session.label
    drun, dnames, dpast, dlabel = dd.session.session._sess.run, dd.steady_names, dd.steady_past, dd.session.label
    one, vdtype = dd._one, vd.ids_dtype
    seq, rounds, stopped = [v.special.decoder_start], [], "max_new_tokens"
    dlen = vlen = d_calls = v_calls = 0
    while len(seq) - 1 < limit:
        budget, drafts = min(k, limit - len(seq)), []
        if budget > 0:
            for token in seq[dlen:]:  # catch-up: the committed tokens the drafter lacks
                df["input_ids"] = one[token]
                start = perf_counter()
                out = drun(dnames, df, None)
                log((dlabel, start, perf_counter()))
                df.update(zip(dpast, out, strict=False))
                row, d_calls = out[-1], d_calls + 1
            dlen = len(seq)
            while True:
                token = int(row.argmax())
                drafts.append(token)
                if token == eos or len(drafts) == budget:
                    break
                df["input_ids"] = one[token]
                start = perf_counter()
                out = drun(dnames, df, None)
                log((dlabel, start, perf_counter()))
                df.update(zip(dpast, out, strict=False))
                row, dlen, d_calls = out[-1], dlen + 1, d_calls + 1
        base = vlen
        vf["input_ids"] = np.array([[seq[-1], *drafts]], dtype=vdtype)
        start = perf_counter()
        out = vrun(vnames, vf, None)
        log((vlabel, start, perf_counter()))
        vf.update(zip(vpast, out, strict=False))
        vlen, v_calls = vlen + len(drafts) + 1, v_calls + 1
        best = out[-1][0].argmax(-1).tolist()
        n = 0
        while n < len(drafts) and drafts[n] == best[n]:
            n += 1
        seq += drafts[:n]
        seq.append(best[n])
        rounds.append((len(drafts), n))
        if eos in seq[len(seq) - n - 1 :]:
            del seq[seq.index(eos, len(seq) - n - 1) :]
            stopped = "eos"
            break
        if len(seq) - 1 >= limit:
            break
        if base + 1 + n < vlen:
            vlen = base + 1 + n
            for p in vpast:
                vf[p] = np.ascontiguousarray(vf[p][:, :, :vlen])
        keep = min(dlen, base + 1 + min(n, len(drafts) - 1)) if drafts else dlen
        if keep < dlen:
            dlen = keep
            for p in dpast:
                df[p] = np.ascontiguousarray(df[p][:, :, :dlen])
    del seq[limit + 1 :]
    trace.ended = perf_counter()
    return SpeculativeDecoded(
        text=v.tokenizer.decode(seq[1:]),
        tokens=tuple(seq[1:]),
        stopped=stopped,
        wall_s=trace.ended - trace.started,
        calls=trace.calls(),
        run_s=trace.run_s(),
        rounds=tuple(Round(proposed=p, accepted=a, bonus=p > 0 and a == p) for p, a in rounds),
        drafter_calls=d_calls,
        verifier_calls=v_calls,
    )


def public_run(tier: Tier) -> Tier:
    """The tier with every session called through onnxruntime's public Python ``run``, as before issue 18's
    second pass: its per-call input checks then fall inside the timed window (measure calls the C++ run)."""
    twin = getattr(tier.decoder, "_with_cache", None)
    for session in (tier.encoder.session, *tier.decoder.sessions, *([twin] if twin else [])):
        session.use_public_run()
    return tier


# --- measuring ----------------------------------------------------------------------------------------------------

Result = tuple[Decoded, Trace]


def exponent(lengths: list[int], seconds: list[float]) -> float:
    slope, _ = np.polyfit(np.log(lengths), np.log(seconds), 1)
    return float(slope)


def decoder_call_s(traces: list[Trace], label: str) -> tuple[float, int]:
    """Seconds inside and number of a model's decoder calls (its encoder left out)."""
    enc = label + ".encoder"
    inside, calls = 0.0, 0
    for tr in traces:
        for name, start, end in tr.log:
            if name.startswith(label + ".") and not name.startswith(enc):
                inside += end - start
                calls += 1
    return inside, calls


def batch_costs(tier: Tier, texts: list[str], prefix: int = 8, repeats: int = 30) -> dict[int, float]:
    """Median seconds of one decoder call of n tokens on top of a ``prefix``-token cache, per n."""
    caches = []
    for text in texts[:16]:
        trace = Trace()
        cache = tier.start(tier.source_ids(text), trace)
        for t in range(prefix):
            _, cache = tier.feed(cache, [3 + t % 20], trace)
        caches.append(cache)
    samples: dict[int, list[float]] = {n: [] for n in BATCH_NS}
    tokens = [5, 9, 11, 7, 13, 17, 19, 23, 29]
    for _ in range(repeats):
        for n in BATCH_NS:  # interleaved across n
            trace = Trace()
            for cache in caches:
                tier.feed(cache, tokens[:n], trace)
            samples[n].extend(trace.inside_s)
    return {n: statistics.median(s) for n, s in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    golden = load_golden(bundled.GOLDEN)
    texts = [r.input for r in golden.rows]
    names = ("base-fp32", "base-int8", "small-int4", "small-int8", "small-fp32-optimum", "small-fp32-merged")
    tiers = {n: load_tier(DEMO / n) for n in names}
    pairs = {
        k: Pair(load_tier(bundled.LITE, label="drafter"), load_tier(bundled.PLAIN, label="verifier")) for k in (2, 4, 8)
    }
    cases: dict[str, Callable[[str], Result]] = {}

    def now(fn: Callable[[str, Trace], Decoded]) -> Callable[[str], Result]:
        def run(text: str) -> Result:
            trace = Trace()
            return fn(text, trace), trace

        return run

    def ids_case(
        encode: Callable[[str], list[int]], fn: Callable[[list[int], Trace], Decoded]
    ) -> Callable[[str], Result]:
        """measure's region: tokenize (timed apart), then a trace made just before the ids decode."""

        def run(text: str) -> Result:
            start = perf_counter()
            ids = encode(text)
            trace = _IdsTrace(perf_counter() - start)
            decoded = fn(ids, trace)
            trace.detokenize_s = decoded.detokenize_s
            return decoded, trace

        return run

    def before(fn: Callable[[str, _BeforeTrace], Decoded]) -> Callable[[str], Result]:
        def run(text: str) -> Result:
            trace = _BeforeTrace()
            return fn(text, trace), trace

        return run

    for name, tier in tiers.items():
        cases[f"{name} before"] = before(lambda t, tr, tier=tier: before_greedy(tier, t, tr))
        cases[name] = ids_case(tier.source_ids, lambda ids, tr, tier=tier: tier.greedy_ids(ids, trace=tr))
    cases["base-fp32 uncached"] = now(lambda t, tr: tiers["base-fp32"].greedy_uncached(t, trace=tr))
    for name in ("base-int8", "small-int4"):
        tier = tiers[name]
        cases[f"{name} IO binding"] = ids_case(tier.source_ids, lambda i, tr, tier=tier: iobinding_greedy(tier, i, tr))
    for name in ("base-int8", "small-int4", "small-fp32-optimum"):  # the bound: the leanest loop, same sessions
        tier = tiers[name]
        cases[f"{name} floor"] = ids_case(tier.source_ids, lambda i, tr, tier=tier: floor_greedy(tier, i, tr))
    for name in ("base-int8", "small-int4"):  # the current loop through the public run: the wrapper's cost
        tier = public_run(load_tier(DEMO / name, label=f"{name}-public"))
        cases[f"{name} public run"] = ids_case(tier.source_ids, lambda i, tr, tier=tier: tier.greedy_ids(i, trace=tr))
    for k, pair in pairs.items():
        cases[f"speculative k={k} before"] = before(lambda t, tr, pair=pair, k=k: before_speculative(pair, t, k, tr))
        cases[f"speculative k={k}"] = ids_case(
            pair.source_ids, lambda i, tr, pair=pair, k=k: pair.decode_ids(i, k, trace=tr)
        )
        cases[f"speculative k={k} floor"] = ids_case(
            pair.source_ids, lambda i, tr, pair=pair, k=k: floor_speculative(pair, i, k, tr)
        )

    for fn in cases.values():  # warm-up: one full pass
        for t in texts:
            fn(t)
    samples: dict[str, list[list[Result]]] = {name: [] for name in cases}
    started = time.perf_counter()
    for _ in range(args.repeats):
        for name, fn in cases.items():  # interleaved
            samples[name].append([fn(t) for t in texts])
    elapsed = time.perf_counter() - started
    for name in cases:  # the loop changed, the decodes did not
        for suffix in (" before", " IO binding", " floor", " public run"):
            if name.endswith(suffix):
                base = name.removesuffix(suffix)
                assert [d.tokens for d, _ in samples[name][0]] == [d.tokens for d, _ in samples[base][0]], name

    print(
        f"golden rows: {len(texts)} (sha256 {golden.sha256[:12]}), repeats {args.repeats}, "
        f"measured in {elapsed:.1f}s; 1 intra-op thread"
    )
    head = (
        f"{'case':<28}{'ms/token':>10}{'x plain':>9}{'inside run':>12}{'overhead':>10}{'ovh text':>10}{'tok us':>8}"
        f"{'us/gap':>8}{'exponent':>10}{'accept':>9}"
    )
    print(head)
    print("-" * len(head))
    ms: dict[str, float] = {}
    rows = []

    def rep_ms(rep: list[Result]) -> float:
        return 1000 * sum(d.wall_s for d, _ in rep) / sum(len(d.tokens) + 1 for d, _ in rep)

    for name, reps in samples.items():
        per_rep_ms = [1000 * sum(d.wall_s for d, _ in rep) / sum(len(d.tokens) + 1 for d, _ in rep) for rep in reps]
        ms[name] = statistics.median(per_rep_ms)
        # median over repeats of each pass's share inside run: a busy neighbour spoils one pass, not the figure
        inside = statistics.median(sum(d.run_s for d, _ in rep) / sum(d.wall_s for d, _ in rep) for rep in reps)
        tok_us, text_ovh = "-", "-"
        if isinstance(reps[0][0][1], _IdsTrace):  # measure's region: tokenizing timed apart
            tok_us = f"{1e6 * statistics.median(tr.tokenize_s for rep in reps for _, tr in rep):.1f}"
            # the old region (source text in) held the encode too; the output's decode was after its clock already
            old = [1 - sum(d.run_s for d, _ in rep) / sum(d.wall_s + tr.encode_s for d, tr in rep) for rep in reps]
            text_ovh = f"{statistics.median(old):.1%}"
        gaps = [g for rep in reps for _, tr in rep for g in tr.outside_s[2:]]
        lengths = [len(d.tokens) + 1 for d, _ in reps[0]]
        per_row = [statistics.median(rep[i][0].wall_s for rep in reps) for i in range(len(texts))]
        acc = ""
        if isinstance(reps[0][0][0], SpeculativeDecoded):
            proposed = sum(d.proposed for d, _ in reps[0])
            acc = f"{sum(d.accepted for d, _ in reps[0]) / proposed:.4f}" if proposed else "-"
        rows.append((name, inside, text_ovh, tok_us, 1e6 * statistics.median(gaps), exponent(lengths, per_row), acc))
    for name, inside, text_ovh, tok_us, gap_us, b, acc in rows:
        ratio = ms[name] / ms["base-int8"]
        cells = (
            f"{ms[name]:>10.3f}{ratio:>9.2f}{inside:>11.1%}{1 - inside:>10.1%}{text_ovh:>10}{tok_us:>8}"
            f"{gap_us:>8.1f}{b:>10.3f}{acc:>9}"
        )
        print(f"{name:<28}{cells}")
    print("\nexponent: slope of log(row wall time) on log(output tokens + 1); O(T) decoding gives <= 1.15")
    print("x plain: ms/token relative to base-int8 (plain), measured side by side in this run")
    print("inside run, overhead: median over repeats of each pass's share of wall time inside / outside session.run")
    print(
        "timed region: token ids in -> ids out for measure's rows; 'before' and 'uncached' rows time from the text"
        "\n  (tokenizing inside). tok us: median us per row tokenizing, timed apart (source encode + output decode);"
        "\n  ovh text: the overhead the same rows read with the source's encode counted inside, as before the change"
    )
    print("us/gap: median seconds between two decoder calls of one row (the loop's own work per token)")
    print("IO binding: outputs kept as OrtValues and bound as the next call's inputs (rebinding is harness work)")
    print(
        "floor: the leanest Python loop over the same sessions and calls (no lanes, no layouts, no objects per call"
        "\n  but the trace entry): what no Python harness gets under on this machine; measure's rows beside it"
    )
    print(
        "inside run: timed just around onnxruntime's C++ run (measure's path); 'before' and 'public run' rows time"
        "\n  around the public Python run, so its per-call input checks count as inside there: compare ms/token"
    )

    print("\nwhere the outside-run time goes, us per row (mean over every repeat) and share of the row's outside time:")
    print(f"  {'case':<28}{'outside':>9}{'to 1st call':>14}{'enc->dec':>16}{'between calls':>16}{'after last':>14}")
    for name in (
        "base-int8 before",
        "base-int8",
        "small-int4 before",
        "small-int4",
        "base-int8 floor",
        "small-fp32-optimum",
        "small-fp32-optimum floor",
        "small-fp32-merged",
        *(f"speculative k={k}{floor}" for k in pairs for floor in ("", " floor")),
    ):
        rows_ = [(d, tr) for rep in samples[name] for d, tr in rep]
        parts = [0.0, 0.0, 0.0, 0.0]
        for d, tr in rows_:
            gaps = tr.outside_s
            encoders = sum(1 for label, _, _ in tr.log if label.endswith(ENCODERS))
            parts[0] += gaps[0]  # ids array (and tokenizing in 'before' rows): Trace made -> first encoder call
            parts[1] += sum(gaps[1 : encoders + 1])  # encoder feeds, empty caches, loop setup
            parts[2] += sum(gaps[encoders + 1 :])  # the decode loop between decoder calls
            parts[3] += tr.started + d.wall_s - tr.log[-1][2]  # last argmax, teardown (frees), stop the clock
        total = sum(parts)
        cells = "".join(f"{1e6 * x / len(rows_):>8.1f} ({x / total:>3.0%})" for x in parts)
        print(f"  {name:<28}{1e6 * total / len(rows_):>9.1f}{cells}")

    print("\nmerged layout (one If graph) vs split optimum layout, same weights, ms/token:")
    for suffix in (" before", ""):
        merged, split = ms[f"small-fp32-merged{suffix}"], ms[f"small-fp32-optimum{suffix}"]
        paired = statistics.median(
            rep_ms(m) / rep_ms(o)
            for m, o in zip(samples[f"small-fp32-merged{suffix}"], samples[f"small-fp32-optimum{suffix}"], strict=True)
        )
        label = "before" if suffix else "now"
        print(
            f"  {label:<7} merged {merged:.3f}  split {split:.3f}  merged/split {merged / split:.2f} "
            f"(median of per-repeat ratios {paired:.2f})"
        )
    calls = {}
    for n in ("small-fp32-merged", "small-fp32-optimum"):
        inside, count = decoder_call_s([tr for rep in samples[n] for _, tr in rep], tiers[n].label)
        calls[n] = inside / count
    print(
        f"  per decoder call inside session.run: merged {1e6 * calls['small-fp32-merged']:.1f} us, "
        f"split {1e6 * calls['small-fp32-optimum']:.1f} us "
        f"(x{calls['small-fp32-merged'] / calls['small-fp32-optimum']:.2f}: onnxruntime's own cost of the If graph)"
    )

    print("\nverifier call of n tokens on an 8-token cache, median us (x single step); fit fixed + per-token * n:")
    print(f"  {'tier':<20}" + "".join(f"{f'n={n}':>16}" for n in BATCH_NS) + f"{'fixed us':>10}{'us/token':>10}")
    batch: dict[str, dict[int, float]] = {}
    for name in ("base-int8", "base-fp32", "small-int4", "small-int8"):
        batch[name] = cost = batch_costs(tiers[name], texts)
        line = fit_batch_cost(list(cost), list(cost.values()))
        cells = "".join(f"{1e6 * s:>9.1f} (x{s / cost[1]:.2f})" for s in cost.values())
        print(f"  {name:<20}{cells}{1e6 * line.fixed_s:>10.1f}{1e6 * line.per_token_s:>10.2f}")

    print("\nspeculative small-int4 -> base-int8: predicted speedup from measured call costs beside Leviathan et al.'s")
    print(
        f"  {'k':<3}{'loop':<8}{'accept':>8}{'E tok':>7}{'tok/rd':>7}{'c':>7}{'batch x':>9}{'draft/rd':>9}"
        f"{'Leviathan':>10}{'measured':>10}{'observed':>10}{'efficiency':>11}"
    )
    verifier_label, drafter_label = pairs[2].verifier.label, pairs[2].drafter.label
    for k in pairs:
        for suffix in (" before", ""):
            # every repeat together: calls, walls and tokens summed over the interleaved passes
            g_all = [r for rep in samples[f"base-int8{suffix}"] for r in rep]
            s_all = [r for rep in samples[f"speculative k={k}{suffix}"] for r in rep]
            traces, decs = [tr for _, tr in s_all], [d for d, _ in s_all]
            single = decoder_call_s([tr for _, tr in g_all], "base-int8")
            batched = decoder_call_s(traces, verifier_label)
            draft = decoder_call_s(traces, drafter_label)
            costs = CallCostInputs(single[0] / single[1], batched[0] / batched[1], draft[0] / draft[1])
            acceptance = sum(d.accepted for d in decs) / sum(d.proposed for d in decs)
            rounds = sum(len(d.rounds) for d in decs)
            m, tpr = draft[1] / rounds, sum(len(d.tokens) + 1 for d in decs) / rounds  # counted as ms/token counts
            observed = rep_ms(g_all) / rep_ms(s_all)
            p = predict(k, acceptance, costs, draft_calls_per_round=m, tokens_per_round=tpr, observed=observed)
            print(
                f"  {k:<3}{'before' if suffix else 'now':<8}{p.acceptance:>8.4f}{p.expected_tokens:>7.2f}"
                f"{p.tokens_per_round:>7.2f}"
                f"{p.cost_ratio:>7.3f}{p.batch_ratio:>9.3f}{p.draft_calls_per_round:>9.2f}{p.leviathan:>10.3f}"
                f"{p.measured_cost:>10.3f}{p.observed:>10.3f}{p.efficiency:>11.3f}"
            )
    print(
        "  c: drafter call / single-step verifier call; batch x: verifier call of k+1 tokens / single step;"
        " draft/rd: drafter calls per round;\n  tok/rd: output tokens (eos included) per round, as ms/token counts them"
        " (E assumes no cut rounds);"
        " measured: tok/rd x single / (draft/rd x drafter call + batched call);\n "
        " observed: greedy base-int8 ms/token / speculative ms/token;\n  efficiency = observed / measured;"
        " call costs are means of the decoder calls (encoders left out) over every repeat of this run"
    )

    def shares(name: str) -> tuple[float, float]:
        """Shares of wall time outside session.run (harness) and in encoder calls, over the whole run."""
        wall = sum(d.wall_s for rep in samples[name] for d, _ in rep)
        run_s = sum(d.run_s for rep in samples[name] for d, _ in rep)
        enc = sum(e - s for rep in samples[name] for _, tr in rep for n, s, e in tr.log if n.endswith(ENCODERS))
        return (wall - run_s) / wall, enc / wall

    h_g, e_g = shares("base-int8")
    print(
        "  where the rest goes (whole run): efficiency ~ decoder-call share of speculative wall / that of greedy;"
        f"\n  greedy base-int8: harness {h_g:.1%}, encoder calls {e_g:.1%}, decoder calls {1 - h_g - e_g:.1%}"
    )
    for k in pairs:
        h_s, e_s = shares(f"speculative k={k}")
        print(
            f"  speculative k={k}: harness {h_s:.1%}, encoder calls {e_s:.1%} (two models), "
            f"decoder calls {1 - h_s - e_s:.1%} -> {(1 - h_s - e_s) / (1 - h_g - e_g):.3f}"
        )


if __name__ == "__main__":
    main()
