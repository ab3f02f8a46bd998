"""Seeded learning benchmarks: raw per-rollout results stored per arm and seed, resumed seed
by seed, and the per-seed tables rendered from them alone."""
