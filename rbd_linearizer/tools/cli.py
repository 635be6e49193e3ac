"""The ``rbd-linearizer`` command: one subcommand (verb) per module of rbd_linearizer.tools.

Each verb module provides ``add_arguments(parser)`` and ``main(args) -> int`` (exit code);
its docstring's first line is the verb's help. Usage errors exit with code 2 and one line on
stderr. Run as ``rbd-linearizer VERB ...`` or ``python -m rbd_linearizer.tools.cli VERB ...``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: Verb name -> module implementing it (imported when the parser is built; keep them light).
VERBS = {
    'compute': 'rbd_linearizer.tools.compute',
    'verify': 'rbd_linearizer.tools.verify',
    'record': 'rbd_linearizer.tools.record',
    'replay': 'rbd_linearizer.tools.replay',
}


class _Parser(argparse.ArgumentParser):
    """ArgumentParser whose usage errors are one line on stderr (exit code 2)."""

    def error(self, message):
        """Print ``prog: error: message`` and exit with code 2."""
        self.exit(2, f'{self.prog}: error: {" ".join(message.split())}\n')


def build_parser() -> argparse.ArgumentParser:
    """Return the ``rbd-linearizer`` parser with one subparser per verb."""
    parser = _Parser(prog='rbd-linearizer', description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest='verb', metavar='VERB', required=True,
                                  parser_class=_Parser)
    for name, module_name in VERBS.items():
        module = importlib.import_module(module_name)
        summary = (module.__doc__ or name).strip().splitlines()[0]
        sub = verbs.add_parser(name, help=summary, description=module.__doc__,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(verb_main=module.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``rbd-linearizer`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    return int(args.verb_main(args))


if __name__ == '__main__':
    sys.exit(main())
