"""Several KGs as one: entity alignment, the merged subgraph, its views, the hypergraph.

`align` finds the same entity in the other KG (cross-KG id properties, then labels); `subgraph`
expands a merged graph hop by hop over every KG and merges aligned nodes; `views` draws it;
`hypergraph` groups edges into the hyperedges INSES and PRoH walk.
"""
