"""``python -m xce_driver.live.bridge``: the ``xce-bridge`` console script."""

from xce_driver.live.bridge.cli import main

raise SystemExit(main())
