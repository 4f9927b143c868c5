"""The test suite, one folder per layer of frontier_qa (scoring/, runtime/, adapters/, store/,
curricula/, probing/, reports/, config/, cli/, plugins/, train/) plus package/ for the
distribution itself. Shared factories: ``tests/factories.py``; shared fixtures: ``tests/conftest.py``;
tiny models: ``tests/tiny_models.py``; real local servers: ``tests/servers/``.
"""
