"""Performance benchmarks (run from a checkout; not installed) and their results in ``results/``."""
