"""The LLM side: token-exact generation, the OpenAI-compatible model server
and the policies the runner evaluates (scripted baselines, Hugging Face, OpenAI-compatible).

Floor: llm; it imports only its own floor and those below it: contract, env machinery, wrappers, serving
(docs/architecture.md).
"""
