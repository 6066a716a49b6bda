"""Golden cases."""
