"""The benchmark table: every operator of ansorc.workloads tuned, then timed side by side against the library calls
that compute the same thing (numpy, PyTorch, onnxruntime), results checked equal. bench/suite.py and
bench/peak_fma.py are the command lines; the pieces live here so that tests exercise them as a package."""
