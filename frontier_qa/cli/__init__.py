"""The ``frontier-qa`` command line (``frontier-qa --help``; ``python -m frontier_qa``).

==========  =====================================================================================
``app``     the root command, exit codes, :func:`main` (the console script)
``_probe``  ``probe`` and ``replay`` (``options``: their options and flag table; ``outputs``: the
            report folder and the console summary)
``_suite``  ``export``, ``merge`` and ``schema``
``_init``   ``init``: config, pytest file, GitHub Actions workflow (``init_files``)
``_cases``  ``cases list``, ``cases show``, ``cases diff``: the case store for people
``_score``  ``score``: recorded executor runs through the scoring core
``_train``  ``train curriculum``, ``train coevolve``, ``train merge``, ``train summary``
==========  =====================================================================================

The CLI is the top layer: it may import anything, and nothing in frontier-qa imports it.
"""

from __future__ import annotations

from frontier_qa.cli.app import main

__all__ = ["main"]
