"""bytegraph's own torch operators: higher-order ops and runtime objects that graphs and
residual code call. A leaf layer: it imports torch only, never trackers or the capture."""
