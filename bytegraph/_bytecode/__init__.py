"""CPython 3.11 bytecode: decoding, assembly, analysis. No torch import."""
