"""`python -m handoffscope.collector` is `handoffscope collector`."""

from handoffscope.collector.cli import main

raise SystemExit(main())
