"""``python -m frontier_qa``: the same as the ``frontier-qa`` command."""

import sys

from frontier_qa.cli import main

sys.exit(main())
