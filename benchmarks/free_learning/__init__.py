"""`make bench-free-learning`: its stages, stored results and report."""
