"""What methods reason with: LLM providers (`llm`, the front door, with `llm_base`, `llm_gate`, `llm_providers`,
`llm_replay`; `local_llm`; the gold stand-in `gold_llm` with `gold_reader`, `gold_replies`), prompts and their
reply parsers (`prompts/`: one module per method, and `parsers`), pruning strategies (`pruning`), and the sentence
embedder (`embeddings`, `encoders`)."""
