"""``python -m crossover``: the same as the ``crossover`` console script."""

import sys

from .cli import main

sys.exit(main())
