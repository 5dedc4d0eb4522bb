"""The reference trainer: GRPO, PPO and GiGPO for multi-turn LLM agents on agentgym envs.

``rollout`` plays groups of episodes as token-in/token-out trajectories; ``advantages``
holds the estimators; ``loss`` the clipped objective, KL and value loss; ``trainer`` the
loop; ``config`` the YAML schema; ``cli`` the ``agentgym train`` command. Needs the
``train`` extra (torch, transformers, peft; tensorboard for its logs).
"""
