"""`python -m grove_operator.initc`: the same program as the `grove-initc` console script."""

import sys

from grove_operator.initc.cli import main

sys.exit(main())
