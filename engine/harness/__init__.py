"""The KBQA harness: question files (`datasets`, `rog`), runs with journals and resumption
(`runner`), ToG-compatible scoring (`evaluate`), and leak-free fixture subgraphs (`extract`)."""
