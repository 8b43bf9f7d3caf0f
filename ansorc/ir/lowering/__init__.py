"""From a scheduled state to a statement tree: loop bounds, peeling, layouts,
prepared (constant) inputs, and the options that steer it (`LowerOptions`)."""
