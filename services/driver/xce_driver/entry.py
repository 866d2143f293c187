"""The entry point of the ``xce-sched`` command.

Loading the command's modules takes most of a second; a Ctrl-C then would end in a
traceback, before ``xce_driver.cli.main`` could turn it into its one line. This
module imports nothing heavy, so it catches that interrupt too.
"""

from __future__ import annotations

import argparse
import sys


def main() -> int:
    """Run ``xce-sched`` (``xce_driver.cli.main``); 130 when interrupted while loading."""
    try:
        from xce_driver.cli import main as run
    except KeyboardInterrupt:
        print("xce-sched: interrupted", file=sys.stderr)
        return 130
    return run()


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``xce-sched`` (``xce_driver.cli.build_parser``)."""
    from xce_driver.cli import build_parser as build

    return build()


if __name__ == "__main__":  # python -m xce_driver.entry, as the console script
    raise SystemExit(main())
