"""What methods reason with: LLM providers (`llm`, `local_llm`), prompts and their reply parsers
(`prompts`), pruning strategies (`pruning`), and the sentence embedder (`embeddings`)."""
