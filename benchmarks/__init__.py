"""Benchmarks: each figure in docs/benchmarks.md is made by one script here (see README.md)."""
