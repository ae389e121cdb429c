"""kgfed for LLM agents: the MCP server (`server`) exposing the 1-hop tools over stdio and HTTP."""
