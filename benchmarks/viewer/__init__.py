"""The trajectory viewer's benchmark: a synthesized large iteration in a local store (bench_viewer.py)."""
