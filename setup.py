"""Package discovery for the mappings pyproject.toml cannot express.

``environments/`` ships as ``agentgym.environments``: every package below it is listed
under that prefix, so a new family folder needs no edit here. ``agentgym/integrations/agentgym_verifiers/`` ships as the
top-level package ``agentgym_verifiers`` only (verifiers imports environments by that name).
"""

from setuptools import find_packages, setup

setup(
    packages=find_packages(include=["agentgym", "agentgym.*"], exclude=["agentgym.integrations.agentgym_verifiers"])
    + ["agentgym.environments", "agentgym_verifiers"]
    + [f"agentgym.environments.{name}" for name in find_packages("environments")],
)
