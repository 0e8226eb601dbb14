"""Pure functions of run records: statistics, timings, the cost profile and model, verdicts, comparisons, history.

Never imports the engine or the suites: a policy change never needs a re-run."""
