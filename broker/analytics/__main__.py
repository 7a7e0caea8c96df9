"""`python -m broker.analytics <job> …`, also the script to hand to `spark-submit`."""

import sys

from broker.analytics.cli import main

if __name__ == "__main__":
    sys.exit(main())
