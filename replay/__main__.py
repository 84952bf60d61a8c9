"""``python -m replay``: the ``convo`` command line."""

from ._cli import main

raise SystemExit(main())
