"""CPython bytecode (3.11 to 3.13): decoding, assembly, analysis. No torch import."""
