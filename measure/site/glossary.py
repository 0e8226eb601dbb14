"""The words a RESULTS page uses, said once where each page first needs them.

Methods explains the how at length; a reader who lands on one page from a link should not have to go there to
learn what "presents" or "framing" mean. Each page asks for the terms it uses and gets one short line of them,
in the order asked, so the wording is written once and every page says it the same way.
"""

from __future__ import annotations

from measure.site.context import Md, md, trusted

TERMS: dict[str, str] = {
    "[lo, hi]": "the 95% interval of the figure before it",
    "tier": "one deployable ONNX artifact of a model: full precision (fp32), plain (dynamic int8) or lite (int4)",
    "golden rows": "the fixed inputs and expected outputs every run decodes",
    "framing": "how many tokens each decoder call is fed: one per call, or k per call as a speculative verifier does",
    "argmax decision": "the next token a greedy decode picks (the largest logit)",
    "presents": "the keys and values a decoder call returns for its cache",
    "KLD": (
        "Kullback-Leibler divergence of a tier's next-token distribution from its full-precision reference's, "
        "in nats, averaged over positions (0: identical)"
    ),
    "same top-1": "the share of positions where the tier's most likely token is the reference's",
    "PPL ratio": "the tier's perplexity on the expected outputs over its reference's (1: no loss)",
    "× reference": "this tier's time per token over its full-precision reference's, repeats paired (below 1: faster)",
    "k": "the tokens a drafter proposes per round, checked by the verifier in one call",
    "acceptance": "the share of drafted tokens the verifier keeps",
}


def glossary(*terms: str) -> Md:
    """One line defining ``terms``, each in bold and its definition after it; unknown terms are a coding error."""
    said = "; ".join(f"**{md(term)}**: {md(TERMS[term])}" for term in terms)
    return trusted(f'<small class="measure-glossary">{said}.</small>')
