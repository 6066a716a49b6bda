"""Sources (how to fetch a value again from a frame) and guards built from them."""
