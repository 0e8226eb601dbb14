"""The results stage: a results tree loaded for pages and verbs (summaries through a disk cache, worker
processes, git blob ids, each machine's calibration file). Between analysis (pure functions of records) and the
site; it never imports the engine, the suites or the site."""
