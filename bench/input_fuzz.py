"""Bad tool input, many more examples: the strategies of tests/server/test_input_properties.py run
against every tool through a real client session, counting what each input got instead of stopping
at the first crash.

    .venv/bin/python -m bench.input_fuzz [--examples N] [--legacy]

Prints a table (tool, inputs tried, isError, ok, refused by the client, crashes) and the distinct
crashes found. A crash: the SDK's bare generic error, an exception out of the call, a hang past
30 s, an error of over 2,000 characters, one that names no argument, a success whose structured
content breaks the outputSchema, or a server that no longer answers a cheap call afterwards.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from research_mcp.llm.extractive import ExtractiveModel
from tests.server.test_input_properties import (
    FUZZ,
    TOOLS,
    InputProbe,
    broken_arguments,
    start_probe,
    valid_arguments,
)


def fuzz(probe: InputProbe, name: str, family: Callable[..., Any], examples: int) -> None:
    @settings(FUZZ, max_examples=examples)
    @given(st.data())
    def run(data: st.DataObject) -> None:
        probe.check(name, data.draw(family(probe, name)))

    run()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200, help="examples per tool and family")
    parser.add_argument("--legacy", action="store_true", help="legacy handshake, extractive model")
    args = parser.parse_args()
    # The crashes are counted and their causes printed below, not logged as tracebacks.
    logging.getLogger("mcp.server.mcpserver.server").propagate = False
    with tempfile.TemporaryDirectory() as home, ExitStack() as stack:
        model = ExtractiveModel() if args.legacy else None
        mode = "legacy" if args.legacy else "default"
        probe = start_probe(stack, Path(home), mode=mode, model=model, fail_on_crash=False)
        for name in TOOLS:
            for family in (valid_arguments, broken_arguments):
                fuzz(probe, name, family, args.examples)
        print(f"{mode} session, {type(model).__name__ if model else 'ScriptedModel'}:")
        print(probe.table())
        print(f"\n{sum(probe.crashes.values())} crashes, {len(probe.crashes)} distinct:")
        for (name, problem), count in sorted(probe.crashes.items()):
            print(f"  {count:>4} x {name}: {problem}")
    sys.exit(0)


if __name__ == "__main__":
    main()
