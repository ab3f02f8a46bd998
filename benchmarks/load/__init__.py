"""The load benchmark (``benchmarks/bench_load.py``): many agent sessions through one proxy for
minutes, every completed call checked on disk. ``client`` runs as ``python -m``, so nothing is
imported here."""
