"""Print the environment fingerprint a run would record (machine id, CPU, versions, git)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON (default: one fact a line)")


def run(args: argparse.Namespace) -> int:
    from measure.suites.environment import environment
    from measure.terminal import strict_json

    env = environment()
    if args.json:
        print(strict_json(env, indent=2))
        return 0
    m = env["machine"]
    print(f"machine_id   {env['machine_id']}")
    print(f"cpu          {m['cpu']} ({m['arch']}, {m['cores']} cores)")
    mem = m["memory_bytes"]
    print(f"memory       {mem / 2**30:.1f} GiB" if mem else "memory       unknown")
    print(f"os           {m['platform']}")
    print(f"python       {env['python']}")
    print(f"onnxruntime  {env['onnxruntime']} ({', '.join(env['onnxruntime_providers'])})")
    print(f"numpy        {env['numpy']}   tokenizers {env['tokenizers']}   onnx {env['onnx']}")
    git = env["git"]
    print(f"git          {git['commit'] or 'not a git checkout'}{' (dirty)' if git['dirty'] else ''}")
    return 0
