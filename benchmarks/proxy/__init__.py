"""The recording-proxy benchmark: a fast vLLM-shaped upstream (``fast_upstream``), a load
generator (``loadgen``), the servers under test (``servers``), the measurements
(``runs``) and their figures (``stats``, ``report``). Run it with
``benchmarks/bench_proxy.py``.

Nothing is imported here: ``fast_upstream`` and ``loadgen`` also run as
``python -m`` modules, which must not be imported before they execute.
"""
