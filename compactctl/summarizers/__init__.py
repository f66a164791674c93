"""Summarizers: offline (deterministic, no network) and llm (any OpenAI-compatible endpoint)."""
