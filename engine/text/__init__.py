"""Text context beside the KG: Wikipedia pages for an entity (`context`), cut into chunks and ranked
(`passages`), as ToG-2 and HydraRAG read them."""
