"""Evaluation: the resumable runner (``agentgym eval``), suites, results folders, multi-agent
arenas, statistics, env fingerprints and the leaderboard with its page; ``arguments`` holds ``agentgym eval``'s flags.

Floor: evaluation; it imports only its own floor and those below it: contract, env machinery, wrappers, serving, llm
(docs/architecture.md).
"""
