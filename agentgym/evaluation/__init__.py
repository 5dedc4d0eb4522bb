"""Evaluation: the resumable runner (``agentgym eval``), suites, results folders, multi-agent
arenas, statistics, env fingerprints and the leaderboard with its page."""
