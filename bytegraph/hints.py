"""Functions users put in their code to steer the tracer (imports nothing from bytegraph)."""


def graph_break() -> None:
    """Force a graph break here: the graph so far is compiled, capturing resumes after this call.

    Eagerly (or outside a compiled function) it does nothing.
    """
