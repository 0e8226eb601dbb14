"""Mutation score of the modules that decide verdicts, one module at a time.

    .venv/bin/pip install -e '.[test,mutation]'
    .venv/bin/python scripts/mutation.py                        # every module in pyproject.toml
    .venv/bin/python scripts/mutation.py measure/analysis/stats.py --jobs 2
    .venv/bin/python scripts/mutation.py --report               # scores of the last runs, no re-run

mutmut (configured under ``[tool.mutmut]``) plants one small bug at a time in a
copy of the package under ``mutants/`` and runs, for each, only the tests that
call the mutated function. This script narrows that further to the test files
``[tool.measure.mutation.modules]`` names for the module, so one module runs in
minutes on a small shared machine, at the lowest CPU priority. A surviving
mutant is a bug the suite would not notice: kill it with a test, or say in the
pull request why it cannot change behaviour (an equivalent mutant).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "mutants"
"""mutmut's copy of the package; rebuilt for every module (its caches do not survive a change of test selection)."""
KEPT = ROOT / ".mutation"
"""Each module's last results (mutmut's .meta file), for --report."""

# mutmut's exit codes per mutant (mutmut/stats.py); a timeout counts as a kill, as mutmut scores it.
KILLED = {1, 3, 24, -24, 36, 152, 255}
SURVIVED = {0}
NO_TESTS = {5, 33}


def _config() -> dict:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return doc["tool"]["measure"]["mutation"]


def modules() -> dict[str, list[str]]:
    return _config()["modules"]


def mutant_globs(module: str) -> list[str]:
    """mutmut names a mutant ``measure.analysis.stats.x_holm__mutmut_3``: the dotted module, then the function.

    ``[tool.measure.mutation.functions]`` may limit a module to the functions that decide
    something (``xǁClassǁmethod*`` for a method); by default every function is mutated.
    """
    dotted = module.removesuffix(".py").replace("/", ".")
    return [f"{dotted}.{f}" for f in _config().get("functions", {}).get(module, ["*"])]


def run_one(module: str, tests: list[str], jobs: int) -> None:
    """In a child process: mutmut keeps global state and edits sys.path, so each module gets a fresh one."""
    os.nice(19)
    from mutmut import configuration

    base = configuration._load_config()
    configuration._config = replace(base, only_mutate=[module], pytest_add_cli_args_test_selection=tests)
    from mutmut.__main__ import _run

    _run(mutant_globs(module), jobs)
    write_survivors(module)


def write_survivors(module: str) -> None:
    """Each surviving mutant's diff, kept beside the results (mutants/ is rebuilt for the next module)."""
    from mutmut.__main__ import find_mutant, get_diff_for_mutant

    meta = WORK / f"{module}.meta"
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"] if meta.exists() else {}
    diffs = []
    for name in sorted(k for k, c in codes.items() if c in SURVIVED):
        diffs.append(f"# {name}\n{get_diff_for_mutant(name, path=find_mutant(name).path)}")
    out = KEPT / f"{module}.survivors.diff"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(diffs), encoding="utf-8")


def score(module: str) -> dict[str, object] | None:
    meta = KEPT / f"{module}.meta"
    if not meta.exists():
        return None
    globs = mutant_globs(module)
    codes = json.loads(meta.read_text(encoding="utf-8"))["exit_code_by_key"]
    codes = {k: c for k, c in codes.items() if any(fnmatch.fnmatchcase(k, g) for g in globs)}
    killed = sorted(k for k, c in codes.items() if c in KILLED)
    survived = sorted(k for k, c in codes.items() if c in SURVIVED)
    untested = sorted(k for k, c in codes.items() if c in NO_TESTS)
    other = sorted(k for k, c in codes.items() if c is not None and k not in {*killed, *survived, *untested})
    tested = len(killed) + len(survived) + len(untested)
    return {
        "module": module,
        "mutants": len(codes),
        "killed": len(killed),
        "survived": survived,
        "untested": untested,
        "other": other,
        "score": len(killed) / tested if tested else None,
    }


def print_scores(names: list[str]) -> None:
    print(f"\n{'module':32} {'mutants':>8} {'killed':>7} {'survived':>9} {'no test':>8} {'score':>7}")
    for name in names:
        s = score(name)
        if s is None:
            print(f"{name:32} {'not run':>8}")
            continue
        pct = "-" if s["score"] is None else f"{s['score']:.1%}"
        print(f"{name:32} {s['mutants']:>8} {s['killed']:>7} {len(s['survived']):>9} {len(s['untested']):>8} {pct:>7}")
    for name in names:
        s = score(name)
        for key in ("survived", "untested", "other"):
            for mutant in s[key] if s else ():
                print(f"  {key:9} {mutant}")
        if s and s["survived"]:
            print(f"  diffs: {(KEPT / f'{name}.survivors.diff').relative_to(ROOT)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", nargs="*", help="module paths as in pyproject.toml (default: all)")
    parser.add_argument("--jobs", type=int, default=1, help="mutants tested at once (default 1)")
    parser.add_argument("--report", action="store_true", help="print the last runs' scores only")
    parser.add_argument("--tests", type=shlex.split, help="pytest arguments replacing the configured ones, quoted")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    known = modules()
    if args.one:
        run_one(args.one, args.tests or known[args.one], args.jobs)
        return 0
    unknown = [m for m in args.module if m not in known]
    if unknown:
        parser.error(f"not configured in [tool.measure.mutation.modules]: {', '.join(unknown)}")
    names = args.module or list(known)
    if not args.report:
        for name in names:
            print(f"== {name}: tests {' '.join(args.tests or known[name])}", flush=True)
            cmd = [sys.executable, __file__, "--one", name, "--jobs", str(args.jobs)]
            cmd += ["--tests", shlex.join(args.tests)] if args.tests else []
            shutil.rmtree(WORK, ignore_errors=True)
            done = subprocess.run(cmd, cwd=ROOT, check=False)
            if done.returncode:
                print(f"   mutmut exited {done.returncode} for {name}", flush=True)
            meta = WORK / f"{name}.meta"
            if meta.exists():
                (KEPT / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(meta, KEPT / f"{name}.meta")
    print_scores(names)
    return 0


if __name__ == "__main__":
    sys.exit(main())
