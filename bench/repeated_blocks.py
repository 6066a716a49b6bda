"""Capture time of a tiny Llama by depth, with `config.reuse_repeated_blocks` off and on, and
torch.compile's beside them (issue 39, item 2): `python -m bench.repeated_blocks [--no-reference]`.

Capture = the first compiled call minus an eager call of the same model (eager backend, CPU,
hidden 64, input_ids (2, 8), no KV cache: a cache is state every layer writes, which no block
replay may skip), after one trivial compile and one untimed capture of the 2-layer model have
paid start-up; the median of 3 fresh captures (`bytegraph.reset()` between them)."""
from __future__ import annotations

import statistics
import sys
import time

import torch

import bytegraph
from bytegraph import config

DEPTHS = (2, 8, 24)


def tiny_llama(layers: int):
    """The tiny `LlamaModel` of the issue, in eval mode, with its input."""
    import transformers
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=99, num_hidden_layers=layers,
                                   use_cache=False)
    model = transformers.LlamaModel(cfg).eval()
    return model, torch.randint(0, 99, (2, 8))


def capture_ms(model, input_ids, reference: bool = False) -> float:
    """One fresh capture's time in ms (first compiled call minus an eager call), by bytegraph or,
    with `reference`, torch.compile."""
    if reference:
        import torch._dynamo  # the reference only

        torch._dynamo.reset()
    bytegraph.reset()
    start = time.perf_counter()
    model(input_ids)
    eager = time.perf_counter() - start
    compiled = (torch.compile if reference else bytegraph.compile)(model, backend="eager")
    start = time.perf_counter()
    compiled(input_ids)
    return (time.perf_counter() - start - eager) * 1000


def measure(layers: int, reuse: bool, repeats: int = 3, reference: bool = False) -> float:
    config.reuse_repeated_blocks = reuse
    model, input_ids = tiny_llama(layers)
    return statistics.median(capture_ms(model, input_ids, reference) for _ in range(repeats))


def main(argv=None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    bytegraph.compile(lambda x: x + 1, backend="eager")(torch.ones(1))  # start-up paid once
    measure(2, False, repeats=1)  # and the first capture of these classes (lazy imports, caches)
    rows = [("bytegraph, reuse_repeated_blocks=False", False, False),
            ("bytegraph, reuse_repeated_blocks=True", True, False)]
    if "--no-reference" not in argv:
        torch.compile(lambda x: x + 1, backend="eager")(torch.ones(1))
        measure(2, False, repeats=1, reference=True)
        rows.append(("torch.compile (reference)", False, True))
    for label, reuse, reference in rows:
        times = {layers: measure(layers, reuse, 1 if reference else 3, reference) for layers in DEPTHS}
        row = "  ".join(f"L={layers}: {ms:7.1f} ms" for layers, ms in times.items())
        print(f"{label:<38}  {row}  24/2 = {times[24] / times[2]:.2f}", flush=True)
    config.reuse_repeated_blocks = False


if __name__ == "__main__":
    main()
