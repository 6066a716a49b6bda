"""Helper modules imported by the tests (globals and functions living in another module)."""
