"""The harness learning benchmark's parts (benchmarks/bench_harness_learning.py)."""
