"""Benchmark suites (``*.yaml``, installed as ``agentgym.benchmarks``) and performance benchmarks."""
