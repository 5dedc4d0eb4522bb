"""The reference trainer: GRPO, PPO and GiGPO (and SFT on expert episodes) for multi-turn LLM agents.

``rollout`` plays groups of episodes as token-in/token-out trajectories; ``advantages``
holds the estimators; ``batch`` the padded tensors and per-token advantages; ``loss`` the clipped
objective, KL and value loss; ``metrics`` the per-iteration log; ``sft_data`` the expert
episodes for supervised fine-tuning; ``selfplay`` the rollouts on multi-agent games (self-play,
opponent pools); ``roles`` teams of roles of one model on one env; ``weights`` the device, the dtypes and a
checkpoint's weights a run loads; ``trainer`` the loop; ``config`` the YAML schema; ``cli`` the ``agentgym train``
command. Needs the ``train`` extra (torch, transformers, peft; tensorboard for its logs).

Floor: training; it imports only its own floor and those below it: contract, env machinery, wrappers, serving, llm,
evaluation (docs/architecture.md).
"""
