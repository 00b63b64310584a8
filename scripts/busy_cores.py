"""Runs a command with every core of the machine kept busy, the way a person's laptop is while a
browser, a build and a video call share it (`make test-stress`):

    python scripts/busy_cores.py --runs 3 -- python -m pytest -q

One Python busy loop per core (``--cores`` to choose how many) runs at the same priority as the
command, for as long as the runs last; the runs stop at the first that fails, and each one's time is
printed. The loops end with the runs, with Ctrl-C, and by themselves if this process is gone.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import subprocess
import sys
import time

#: Hours after which a busy loop ends by itself whatever happens (a bound, never reached by a run).
LIFETIME_S = 4 * 3600


def spin(parent: int) -> None:
    """Burn one core until the parent is gone (or LIFETIME_S has passed)."""
    ends = time.monotonic() + LIFETIME_S
    while os.getppid() == parent and time.monotonic() < ends:
        for _ in range(200_000):
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument(
        "--cores", type=int, default=os.cpu_count() or 1, help="busy loops (default: one per core)"
    )
    parser.add_argument("--runs", type=int, default=1, help="runs in a row; stops at the first that fails")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command to run")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (after --)")
    loops = [
        multiprocessing.Process(target=spin, args=(os.getpid(),), daemon=True) for _ in range(args.cores)
    ]
    for loop in loops:
        loop.start()
    print(f"busy_cores: {len(loops)} busy loops on {os.cpu_count()} cores", file=sys.stderr, flush=True)
    code = 0
    try:
        for run in range(1, args.runs + 1):
            started = time.monotonic()
            code = subprocess.call(command)
            took = time.monotonic() - started
            verdict = "passed" if code == 0 else f"failed (exit {code})"
            print(
                f"busy_cores: run {run} of {args.runs} {verdict} in {took:.0f} s", file=sys.stderr, flush=True
            )
            if code != 0:
                break
    except KeyboardInterrupt:
        code = 130
    finally:
        for loop in loops:
            loop.terminate()
        for loop in loops:
            loop.join(timeout=5)
    return code


if __name__ == "__main__":
    sys.exit(main())
