"""GPU backend: CuPy glue and the one kernel loader for kernels/*.cu (imported lazily)."""
