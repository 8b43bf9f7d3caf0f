"""Statement-tree passes a target lists in its pipeline (vectorize, register blocking,
prefetch, edge tiles, ...) and the `check_*` verifiers run between them."""
