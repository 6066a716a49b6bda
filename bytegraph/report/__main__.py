"""`python -m bytegraph.report DIR`: see `cli.py`."""
import sys

from .cli import main

sys.exit(main())
