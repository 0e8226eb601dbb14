"""Timings, fits and verdicts of a synthetic record whose every number is known in advance.

The recorded fixture's samples are replaced by exact functions of each row's output
length: the plain tier takes time ∝ (t+1), the reference twice that, the lite tier
∝ (t+1)² (a decoder that re-feeds its prefix). The analysis must find exponents 1, 1
and 2, fail the O(T) gate on the lite tier only, and show the same numbers on the
Wall-clock page and in metrics.json.
"""

from __future__ import annotations

import copy
import html
import math
from dataclasses import replace

import numpy as np
import pytest
from tests_support import DATA_DIR

from measure.analysis.profile import ProfileRatios, tier_costs
from measure.analysis.record_analysis import analyse
from measure.analysis.rules import failed_gates, verdicts
from measure.analysis.stats import Estimate, fit_exponent, summarize
from measure.analysis.timings import pair_timings, tier_timings
from measure.record.io import load_record
from measure.record.model import from_document
from measure.site.charts import Palette
from measure.site.context import RunLinks
from measure.site.metrics import metrics
from measure.site.pages.wallclock import wallclock_page

DATA = DATA_DIR
SCALE = (1.0, 1.2, 0.9)  # one factor per repeat: the median repeat is the first
PLAIN, REF, LITE = "base-int8", "base-fp32", "small-int4"
K2, K4 = "small-int4->base-int8@k2", "small-int4->base-int8@k4"


def _samples(per_row: list[float], run_share: float) -> tuple[list[list[float]], list[list[float]]]:
    wall = [[s * x for x in per_row] for s in SCALE]
    return wall, [[run_share * x for x in rep] for rep in wall]


def synthetic() -> dict:
    doc = copy.deepcopy(load_record(DATA / "record-v3.json"))
    cases = doc["wallclock"]["cases"]
    t = cases[PLAIN]["tokens"]
    plain = [1e-4 * (n + 1) for n in t]
    cases[PLAIN]["wall_s"], cases[PLAIN]["run_s"] = _samples(plain, 0.95)
    cases[REF]["wall_s"], cases[REF]["run_s"] = _samples([2 * x for x in plain], 0.8)
    cases[LITE]["wall_s"], cases[LITE]["run_s"] = _samples([1e-5 * (n + 1) ** 2 for n in t], 0.9)
    for name, speedup in ((K2, 2.0), (K4, 1.25)):
        c = cases[name]
        c["wall_s"], c["run_s"] = _samples([x / speedup for x in plain], 0.9)
        c["drafter_run_s"] = [[1e-5] * len(t) for _ in SCALE]
    k4 = cases[K4]
    k4["accepted"] = [p - 1 for p in k4["proposed"]]
    k4["proposed_by_position"], k4["accepted_by_position"] = [29, 28, 28, 0], [29, 20, 10, 0]
    return doc


# Function-scoped on purpose: mutmut runs, for each mutant, only the tests it saw calling the
# mutated function, and a module fixture's calls are seen by the first test that used it only.
@pytest.fixture
def record():
    return from_document(synthetic(), "synthetic")


@pytest.fixture
def tiers(record):
    return {t.tier: t for t in tier_timings(record)}


@pytest.fixture
def pairs(record):
    return {p.case: p for p in pair_timings(record)}


def test_time_quadratic_in_length_fits_exponent_two_and_fails_the_linear_gate(record, tiers):
    for name, b in ((PLAIN, 1.0), (REF, 1.0), (LITE, 2.0)):
        e = tiers[name].exponent
        assert (e.value, e.lo, e.hi) == pytest.approx((b, b, b)), name
    found = {v.subject: v for v in verdicts(record) if v.topic == "decode-linear"}
    assert {n: v.outcome for n, v in found.items()} == {REF: "success", PLAIN: "success", LITE: "failure"}
    assert found[LITE].answer == "no" and found[LITE].gate and found[LITE].value == pytest.approx(2.0)
    assert not found[PLAIN].gate and found[PLAIN].answer == "yes"
    assert [v.subject for v in failed_gates(verdicts(record)) if v.topic == "decode-linear"] == [LITE]


def test_the_exponent_is_fitted_on_cpu_time_where_the_record_has_it():
    """Load stretches a long row's wall time more than a short one's (a short row fits in one scheduler slice):
    wall time quadratic while the CPU time is linear is a machine that was busy, not a decode that is O(T^2). And
    a decode whose CPU time is quadratic fails whatever its wall time says."""
    doc = synthetic()
    cases = doc["wallclock"]["cases"]
    t = cases[PLAIN]["tokens"]
    linear, quadratic = [1e-4 * (n + 1) for n in t], [1e-5 * (n + 1) ** 2 for n in t]
    cases[PLAIN]["wall_s"], _ = _samples(quadratic, 0.95)  # a busy machine's wall times
    cases[PLAIN]["cpu_s"], _ = _samples(linear, 0.95)
    cases[LITE]["wall_s"], _ = _samples(linear, 0.9)
    cases[LITE]["cpu_s"], _ = _samples(quadratic, 0.9)  # the work grows as T^2
    record = from_document(doc, "synthetic")
    found = {v.subject: v for v in verdicts(record) if v.topic == "decode-linear"}
    assert (found[PLAIN].outcome, found[LITE].outcome) == ("success", "failure")
    assert found[PLAIN].measured == "exponent 1.00 [1.00, 1.00] (CPU time)"
    assert found[REF].measured == "exponent 1.00 [1.00, 1.00]"  # no CPU times recorded: wall time, said plainly
    timing = {x.tier: x for x in tier_timings(record)}
    assert (timing[PLAIN].exponent_of, timing[REF].exponent_of) == ("cpu", "wall")
    cases[PLAIN]["cpu_s"][0][0] = 0.0  # a CPU time that cannot be a row's: the wall times, not a log of zero
    assert {x.tier: x for x in tier_timings(from_document(doc, "synthetic"))}[PLAIN].exponent_of == "wall"


def test_tier_numbers_are_the_medians_of_the_repeats(record, tiers):
    t = record.wallclock.cases[PLAIN].tokens
    total = 1e-4 * sum(n + 1 for n in t)  # the median repeat (scale 1.0)
    plain = tiers[PLAIN]
    assert plain.tokens == sum(t) and (plain.role, plain.precision) == ("plain", "int8-dynamic")
    assert plain.total_s.value == pytest.approx(total)
    assert (plain.total_s.lo, plain.total_s.hi) == pytest.approx((0.9 * total, 1.2 * total))
    assert plain.ms_per_token.value == pytest.approx(1000 * total / sum(t))
    assert plain.tokens_per_s.value == pytest.approx(sum(t) / total)
    assert plain.ms_per_token.q1 == pytest.approx(1000 * 0.95 * total / sum(t))  # between 0.9 and 1.0
    assert plain.overhead == pytest.approx(0.05) and tiers[REF].overhead == pytest.approx(0.2)
    ref = tiers[REF].ratio_vs_plain
    assert (ref.value, ref.lo, ref.hi) == pytest.approx((2.0, 2.0, 2.0))  # repeats paired: exactly 2
    assert plain.ratio_vs_plain.value == pytest.approx(1.0)
    lite = 1e-5 * sum((n + 1) ** 2 for n in t) / total
    assert tiers[LITE].ratio_vs_plain.value == pytest.approx(lite)


def test_without_intervals_the_values_stay_and_the_bootstrap_is_skipped(record, tiers):
    quick = {t.tier: t for t in tier_timings(record, intervals=False)}
    for name, t in quick.items():
        full = tiers[name]
        for field in ("total_s", "ms_per_token", "tokens_per_s"):
            e = getattr(t, field)
            assert e.lo == e.value == e.hi == pytest.approx(getattr(full, field).value), (name, field)
        assert t.ratio_vs_plain is None
        assert t.exponent.value == pytest.approx(full.exponent.value) and t.overhead == full.overhead
    fast = {p.case: p for p in pair_timings(record, intervals=False)}
    assert fast[K2].ms_per_token.lo == fast[K2].ms_per_token.hi == pytest.approx(fast[K2].ms_per_token.value)
    assert fast[K2].observed_speedup.lo == pytest.approx(2.0)


def test_pair_numbers_follow_their_definitions(record, pairs):
    cases = record.wallclock.cases
    k4, verifier = cases[K4], cases[PLAIN]
    p = pairs[K4]
    assert (p.pair, p.drafter, p.verifier, p.k) == ("small-int4->base-int8", LITE, PLAIN, 4)
    proposed, accepted, rounds = sum(k4.proposed), sum(k4.accepted), sum(k4.rounds)
    assert accepted == proposed - 12
    assert p.acceptance == pytest.approx(accepted / proposed)
    assert p.mean_accepted_length == pytest.approx((accepted + rounds) / rounds)
    assert p.acceptance_by_position == pytest.approx((1.0, 20 / 28, 10 / 28, None))
    drafter_call = 3 * 12 * 1e-5 / (3 * (sum(k4.drafter_calls) + 12))
    verifier_call = float(np.sum(verifier.run_s)) / (3 * sum(verifier.calls))
    assert p.cost_ratio == pytest.approx(drafter_call / verifier_call)
    a, k, c = accepted / proposed, 4, drafter_call / verifier_call
    predicted = (1 - a ** (k + 1)) / ((1 - a) * (k * c + 1))
    assert p.predicted_speedup == pytest.approx(predicted)
    s = p.observed_speedup
    assert (s.value, s.lo, s.hi) == pytest.approx((1.25, 1.25, 1.25))
    assert p.observed_over_predicted == pytest.approx(1.25 / predicted)
    assert p.overhead == pytest.approx(0.1)
    assert p.ms_per_token.value == pytest.approx(1000 * 1e-4 * sum(n + 1 for n in k4.tokens) / 1.25 / sum(k4.tokens))
    assert pairs[K2].acceptance == 1.0 and pairs[K2].observed_speedup.value == pytest.approx(2.0)
    rounds = sum(cases[K2].rounds)
    assert pairs[K2].mean_accepted_length == pytest.approx((sum(cases[K2].accepted) + rounds) / rounds)


def test_each_k_and_the_pair_over_every_k_are_judged_for_speedup(record):
    found = verdicts(record)
    per_k = {v.key: v for v in found if v.topic == "speculative-speedup-k"}
    assert {k: (v.subject, v.outcome, v.answer) for k, v in per_k.items()} == {
        K2: ("small-int4->base-int8 at k=2", "success", "yes"),
        K4: ("small-int4->base-int8 at k=4", "success", "yes"),
    }
    assert per_k[K4].value == pytest.approx(1.25) and per_k[K2].value == pytest.approx(2.0)
    (v,) = [v for v in found if v.topic == "speculative-speedup"]
    assert (v.subject, v.key) == ("small-int4->base-int8", "small-int4->base-int8")
    assert (v.outcome, v.answer, v.value, v.lo) == ("success", "yes, at k=2, 4", pytest.approx(2.0), pytest.approx(2.0))
    assert v.rule == "some k's 97.5% interval (Bonferroni over 2 k) above 1×"
    doc = synthetic()
    for name in (K2, K4):  # both slower than greedy: the speedup verdict fails (it is not a gate)
        c = doc["wallclock"]["cases"][name]
        c["wall_s"] = [[3 * x for x in rep] for rep in doc["wallclock"]["cases"][PLAIN]["wall_s"]]
    found = verdicts(from_document(doc, "slow"))
    (slow,) = [v for v in found if v.topic == "speculative-speedup"]
    assert (slow.outcome, slow.answer, slow.gate) == ("failure", "no: slower at every k", False)
    assert slow.value == pytest.approx(1 / 3)
    ks = [(v.outcome, v.answer, v.gate) for v in found if v.topic == "speculative-speedup-k"]
    assert ks == [("failure", "no", False)] * 2


def test_a_pair_without_its_verifiers_greedy_case_is_left_out():
    doc = synthetic()
    del doc["wallclock"]["cases"][PLAIN]
    r = from_document(doc, "no-verifier")
    assert pair_timings(r) == []
    assert {t.tier for t in tier_timings(r)} == {REF, LITE}
    assert all(t.ratio_vs_plain is None for t in tier_timings(r))  # no plain tier to divide by


def test_cases_with_more_repeats_than_their_partner_are_paired_on_the_repeats_both_have():
    """A budgeted run's top-up gives the widest intervals more repeats: a ratio pairs the first repeats."""
    doc = synthetic()
    full = from_document(doc, "full")
    plain = doc["wallclock"]["cases"][PLAIN]
    plain["wall_s"], plain["run_s"] = plain["wall_s"][:2], plain["run_s"][:2]
    r = from_document(doc, "fewer-repeats")
    lite = next(t for t in tier_timings(r) if t.tier == LITE)
    cases = r.wallclock.cases
    first_two = cases[LITE].per_repeat_ms_per_token[:2] / cases[PLAIN].per_repeat_ms_per_token
    assert lite.ratio_vs_plain.value == pytest.approx(float(np.exp(np.log(first_two).mean())))
    assert lite.ratio_vs_plain.level == 0.95 and cases[LITE].repeats > cases[PLAIN].repeats == 2
    assert [p.case for p in pair_timings(r)] == [p.case for p in pair_timings(full)]


def test_a_record_without_wallclock_has_no_timings():
    doc = synthetic()
    doc["wallclock"] = None
    r = from_document(doc, "framing-only")
    assert tier_timings(r) == [] and pair_timings(r) == []


def test_too_few_lengths_give_no_exponent():
    doc = synthetic()
    for c in doc["wallclock"]["cases"].values():
        c["tokens"] = [5] * len(c["tokens"])
    r = from_document(doc, "one-length")
    assert all(t.exponent is None for t in tier_timings(r, intervals=False))
    assert not [v for v in verdicts(r) if v.topic == "decode-linear"]


def _cells(cell: str) -> tuple[float, float, float]:
    """A stacked cell: ``value[unit]<br><small>[lo, hi]</small>``."""
    value, interval = html.unescape(str(cell)).split("<br><small>[")
    lo, hi = interval.removesuffix("]</small>").split(", ")
    return float(value.removesuffix("×")), float(lo), float(hi)


def test_the_wallclock_page_and_metrics_json_show_the_analysis_numbers(record):
    a = analyse(record)
    page = wallclock_page(a, RunLinks(frozenset()), Palette())
    rows = {str(r.tier): r for r in page.tiers}
    doc = metrics({record.machine_id: a})["machines"][record.machine_id]
    for t in a.tiers:
        row = rows[t.tier]
        assert row.tokens == t.tokens
        assert _cells(row.ms_per_token) == pytest.approx(
            (t.ms_per_token.value, t.ms_per_token.lo, t.ms_per_token.hi), abs=1e-3
        )
        assert _cells(row.total_s) == pytest.approx((t.total_s.value, t.total_s.lo, t.total_s.hi), abs=5e-3)  # 2 digits
        assert _cells(row.tokens_per_s) == pytest.approx(
            (t.tokens_per_s.value, t.tokens_per_s.lo, t.tokens_per_s.hi), abs=0.5
        )
        r = t.ratio_vs_plain
        assert _cells(row.ratio) == pytest.approx((r.value, r.lo, r.hi), abs=0.005)
        e = t.exponent
        assert _cells(row.exponent) == pytest.approx((e.value, e.lo, e.hi), abs=0.005)
        assert str(row.overhead) == f"{t.overhead:.1%}"
        m = doc["tiers"][t.tier]
        assert m["ms_per_token"] == t.ms_per_token.to_dict()
        assert m["ratio_vs_plain"] == r.to_dict() and m["exponent"] == e.to_dict()
        assert m["overhead"] == t.overhead
    assert _cells(rows[REF].ratio)[0] == 2.0 and _cells(rows[LITE].exponent)[0] == 2.0
    pairs = {(html.unescape(str(p.case)), p.k): p for p in page.pairs}
    for p in a.pairs:
        row = pairs[(p.pair, p.k)]
        assert float(row.acceptance) == pytest.approx(p.acceptance, abs=5e-5)
        assert float(row.mean_length) == pytest.approx(p.mean_accepted_length, abs=5e-3)
        assert float(row.cost_ratio) == pytest.approx(p.cost_ratio, abs=5e-3)
        assert float(row.predicted) == pytest.approx(p.predicted_speedup, abs=5e-3)
        assert _cells(row.observed)[0] == pytest.approx(p.observed_speedup.value, abs=5e-3)
        assert float(row.observed_over_predicted) == pytest.approx(p.observed_over_predicted, abs=5e-3)
    assert str(pairs[("small-int4->base-int8", 4)].by_position) == "1.00 0.71 0.36 -"


def test_intervals_use_the_repeats_and_the_exponent_the_records_seed(record, tiers):
    case = record.wallclock.cases[PLAIN]
    expected = summarize(case.per_repeat_ms_per_token, level=0.95)  # order-statistic interval of the repeats
    assert tiers[PLAIN].ms_per_token == expected
    assert tiers[PLAIN].ms_per_token != summarize(case.per_repeat_totals, level=0.95)
    lengths = [n + 1 for n in case.tokens]
    per_row = np.median(case.wall_s, axis=0)
    doc = synthetic()
    doc["config"]["wallclock"]["bootstrap"] = 3000  # the exponent's resamples are capped at 1000
    doc["wallclock"]["cases"][PLAIN]["wall_s"] = [
        [x * (1 + 0.3 * ((i * 7 + r) % 5)) for i, x in enumerate(rep)]
        for r, rep in enumerate(doc["wallclock"]["cases"][PLAIN]["wall_s"])
    ]
    r = from_document(doc, "noisy")
    noisy = r.wallclock.cases[PLAIN]
    (t,) = [t for t in tier_timings(r, intervals=False) if t.tier == PLAIN]
    seed = doc["config"]["wallclock"]["seed"]
    want = fit_exponent(lengths, np.median(noisy.wall_s, axis=0), resamples=1000, seed=seed)
    assert t.exponent == want
    assert t.exponent != fit_exponent(lengths, np.median(noisy.wall_s, axis=0), resamples=1001, seed=seed)
    assert fit_exponent(lengths, per_row, resamples=10, seed=0).value == pytest.approx(1.0)


def test_pair_fallbacks_when_counts_or_timings_are_missing():
    doc = synthetic()
    cases = doc["wallclock"]["cases"]
    k2 = cases[K2]
    k2["proposed"] = [0] * len(k2["proposed"])
    k2["accepted"] = [0] * len(k2["accepted"])
    k2["rounds"] = [0] * len(k2["rounds"])
    k2["proposed_by_position"] = [0, 0]
    k2["accepted_by_position"] = [0, 0]
    del k2["drafter_run_s"]
    del k2["pair"]
    r = from_document(doc, "fallbacks")
    p = {p.case: p for p in pair_timings(r)}[K2]
    assert p.acceptance is None and p.mean_accepted_length == 0.0
    assert p.acceptance_by_position == (None, None)
    assert p.cost_ratio == 0.0  # no drafter time recorded
    assert p.predicted_speedup == pytest.approx(1.0)  # acceptance 0: one token per round, at no drafter cost
    assert p.pair == K2
    zero = synthetic()
    plain = zero["wallclock"]["cases"][PLAIN]
    plain["run_s"] = [[0.0] * len(rep) for rep in plain["run_s"]]
    q = {p.case: p for p in pair_timings(from_document(zero, "no-run-time"))}[K4]
    assert math.isnan(q.cost_ratio)


def test_given_timings_are_used_not_recomputed(record):
    quad = replace(tier_timings(record, intervals=False)[0], tier="given", exponent=Estimate(3.0, 2.9, 3.1))
    found = verdicts(record, tiers=[quad], pairs=[])
    assert [(v.topic, v.subject, v.outcome) for v in found if v.topic == "decode-linear"] == [
        ("decode-linear", "given", "failure")
    ]
    assert not [v for v in found if v.topic == "speculative-speedup"]
    (best,) = pair_timings(record)[:1]
    slow = Estimate(0.5, 0.4, 0.6)
    given = replace(best, pair="given", observed_speedup=slow, observed_speedup_family=slow)
    only = verdicts(record, tiers=[], pairs=[given])
    assert [(v.topic, v.subject, v.outcome) for v in only if v.topic.startswith("speculative-speedup")] == [
        ("speculative-speedup-k", f"given at k={best.k}", "failure"),
        ("speculative-speedup", "given", "failure"),
    ]


def test_given_profile_ratios_are_used_and_the_full_analysis_judges_what_it_computed(record):
    given = ProfileRatios("given", "lite", 2.0, None, None)
    found = verdicts(record, ratios=[given])
    assert [(v.topic, v.subject, v.outcome) for v in found if v.topic.startswith("lite-")] == [
        ("lite-smaller", "given", "failure")
    ]
    a = analyse(record)  # timings and ratios computed once, with intervals: the same verdicts as computed alone
    assert list(a.verdicts) == verdicts(record)
    assert list(a.costs) == tier_costs(record)


def test_timings_are_reproducible_and_a_skipped_pair_skips_only_itself(record):
    assert tier_timings(record) == tier_timings(record)
    assert pair_timings(record) == pair_timings(record)
    doc = synthetic()
    doc["wallclock"]["cases"][K2]["verifier"] = "ghost"  # the first pair has no greedy case to compare with
    assert [p.case for p in pair_timings(from_document(doc, "ghost"))] == [K4]


def test_intervals_of_noisy_repeats_come_from_the_records_seed():
    doc = synthetic()
    cases = doc["wallclock"]["cases"]
    rows = [1e-4 * (n + 1) for n in cases[PLAIN]["tokens"]]
    for i, name in enumerate((PLAIN, REF, LITE, K2, K4)):
        factors = [1 + 0.37 * ((7 * r + 3 * i) % 9) / 9 for r in range(9)]  # nine distinct repeats
        cases[name]["wall_s"] = [[f * x for x in rows] for f in factors]
        cases[name]["run_s"] = [[0.9 * f * x for x in rows] for f in factors]
        if "drafter_run_s" in cases[name]:
            cases[name]["drafter_run_s"] = [[1e-5] * len(rows) for _ in factors]
    r = from_document(doc, "noisy")
    assert tier_timings(r) == tier_timings(r) and pair_timings(r) == pair_timings(r)
    for t in tier_timings(r):
        assert t.ms_per_token.lo < t.ms_per_token.value < t.ms_per_token.hi
    for p in pair_timings(r):
        assert p.ms_per_token.lo < p.ms_per_token.value < p.ms_per_token.hi


def test_no_tier_is_timed_against_a_plain_tier_of_the_other_model_kind():
    from measure.record.io import load_record
    from measure.record.model import from_document

    record = from_document(load_record(DATA_DIR / "record-v3-lm.json"), "record-v3-lm.json")
    plain_kind = record.tiers[record.plain].kind
    found = {t.tier: t for t in tier_timings(record)}
    assert {record.tiers[n].kind for n in found} == {"seq2seq", "causal"}
    for name, t in found.items():
        assert (t.ratio_vs_plain is not None) == (record.tiers[name].kind == plain_kind), name
