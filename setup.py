"""Package discovery for the one mapping pyproject.toml cannot express.

``environments/`` ships as ``agentgym.environments``: every package below it is listed
under that prefix, so a new family folder needs no edit here.
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["agentgym", "agentgym.*"])
    + ["agentgym.environments"]
    + [f"agentgym.environments.{name}" for name in find_packages("environments")],
)
