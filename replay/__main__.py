"""``python -m replay``: the ``convo`` command line."""

from .cli import main

raise SystemExit(main())
