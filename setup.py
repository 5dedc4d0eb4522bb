"""Package discovery for the mappings pyproject.toml cannot express.

``environments/`` ships as ``agentgym.environments`` and ``benchmarks/`` as
``agentgym.benchmarks``: every package below them is listed under that prefix, so a new
family folder needs no edit here.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["agentgym", "agentgym.*"])
    + ["agentgym.environments", "agentgym.benchmarks"]
    + [f"agentgym.environments.{name}" for name in find_packages("environments")],
)
