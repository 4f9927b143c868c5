"""Real servers that tests (and benchmarks) start on 127.0.0.1; see :mod:`tests.servers.fake_openai`."""
