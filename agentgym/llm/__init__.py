"""The LLM side: token-exact generation, the OpenAI-compatible model server
and the policies the runner evaluates (scripted baselines, Hugging Face, OpenAI-compatible)."""
