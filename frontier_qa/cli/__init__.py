"""The ``frontier-qa`` command line (``frontier-qa --help``; ``python -m frontier_qa``).

==========  =========================================================================
``app``     the root command, exit codes, :func:`main` (the console script)
``probe``   ``probe`` and ``replay`` (``options``: their options and flag table; ``outputs``: the
            report folder and the console summary)
``suite``   ``export``, ``merge`` and ``schema``
``init``    ``init``: config, pytest file, GitHub Actions workflow (``init_files``)
``cases``   ``cases list``, ``cases show``, ``cases diff``: the case store for people
``score``   ``score``: recorded executor runs through the scoring core
``train``   ``train curriculum``, ``train coevolve``, ``train merge``, ``train summary``
==========  =========================================================================

The CLI is the top layer: it may import anything, and nothing in frontier-qa imports it.
"""

from __future__ import annotations

from frontier_qa.cli.app import main

__all__ = ["main"]
