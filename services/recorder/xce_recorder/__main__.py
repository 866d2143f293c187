"""``python -m xce_recorder``: the ``xce-recorder`` console script."""

from xce_recorder.cli import main

raise SystemExit(main())
