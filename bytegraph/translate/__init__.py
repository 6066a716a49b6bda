"""The instruction translator, opcode families, and the capture entry point."""
from .translator import HANDLED_OPCODES
from .unsupported import UNSUPPORTED_OPCODES

__all__ = ["HANDLED_OPCODES", "UNSUPPORTED_OPCODES"]
