"""`python -m broker` is the `warrenmq` command."""

import sys

from broker.cli import main

sys.exit(main())
