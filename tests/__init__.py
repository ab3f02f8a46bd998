"""OpenForge test suite (a regular package: verl installs a top-level `tests` package that would otherwise shadow this one)."""
