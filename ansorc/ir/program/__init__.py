"""What a computation is: expressions, `te` tensors, the compute DAG, dtypes and names.

Nothing here knows about schedules or targets; everything else builds on it.
"""
