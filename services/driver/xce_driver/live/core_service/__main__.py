"""``python -m xce_driver.live.core_service``: the ``xce-core-service`` console script."""

from xce_driver.live.core_service.cli import main

raise SystemExit(main())
