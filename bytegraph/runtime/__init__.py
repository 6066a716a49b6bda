"""The call wrapper, cache entries, recompiles and logging."""
