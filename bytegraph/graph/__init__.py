"""The output graph (FX graph, inputs by source, fake tensors), residual codegen, backends."""
