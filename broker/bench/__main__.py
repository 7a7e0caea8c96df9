"""`python -m broker.bench` is `warrenmq bench`."""

import sys

from broker.bench.runner import main

sys.exit(main())
