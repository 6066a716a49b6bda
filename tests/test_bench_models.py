"""`make bench`'s transformers workloads (bench/model_workloads.py): the table has one workload
per model of `bench.hf_models.ONE_GRAPH` with the models' targets, each builds the same model
every time, and one bytegraph capture through the bench's own capture path (keyword inputs,
no_grad, output tensors compared) equals eager, for one model of each family."""
import pytest

pytest.importorskip("transformers")

from bench import run  # noqa: E402
from bench.hf_models import ONE_GRAPH, output_tensors  # noqa: E402
from bench.workloads import WORKLOADS, model_workloads  # noqa: E402

MODEL_WORKLOADS = [WORKLOADS[model_workloads.PREFIX + name] for name in ONE_GRAPH]
BYTEGRAPH = next(system for system in run.SYSTEMS if system.name == "bytegraph")


def test_every_one_graph_model_is_a_workload_with_the_model_targets():
    assert model_workloads.SKIPPED is None
    names = [name for name in WORKLOADS if name.startswith(model_workloads.PREFIX)]
    assert names == [work.name for work in MODEL_WORKLOADS]
    for work in MODEL_WORKLOADS:
        # 9 fresh captures per system (median) and 21 timing rounds, where other workloads
        # take the run's 5 and 7
        assert (work.capture_target, work.overhead_target, work.captures, work.rounds) == (0.1, 1.0, 9, 21)
    assert run.DEFAULT_CAPTURES == 5


def test_every_build_has_the_same_weights():
    first, second = (WORKLOADS["hf_gpt2"].build() for _ in range(2))
    assert first.fn is not second.fn
    for a, b in zip(first.fn.state_dict().values(), second.fn.state_dict().values(), strict=True):
        assert a.equal(b)


# one model per family keeps this file fast; tests/models checks every ONE_GRAPH model
@pytest.mark.parametrize("name", ["gpt2", "t5", "vit", "whisper_encoder"])
def test_one_bench_capture_equals_eager(name):
    work = WORKLOADS[model_workloads.PREFIX + name]
    case = work.build()
    assert not case.grad and not case.args and case.kwargs
    expected = case.comparable(case())
    assert expected and case.comparable is output_tensors
    m = run.Measurement()
    run._capture_once(BYTEGRAPH, work, expected, m)  # raises if an output differs from eager's
    assert m.error is None and len(m.capture_ms_samples) == 1 and m.compiled is not None
    again = case.comparable(m.case(m.compiled))
    assert len(again) == len(expected) and all(a.equal(b) for a, b in zip(again, expected))


def test_table_has_one_section_per_pair_of_targets():
    def row(name, targets):
        system = {"capture_ms": 1.0, "overhead_us": -1.0, "error": None}
        return {"name": name, "eager_us": 1.0, "targets": dict(zip(("capture_ms", "overhead_us"), targets)),
                "systems": {"bytegraph": system, "torch.compile": dict(system, capture_ms=20.0)},
                "capture_ms_ratio": 0.05, "capture_ms_verdict": "PASS", "overhead_us_ratio": None,
                "overhead_us_verdict": "PASS"}

    text = run.format_table([row("a", (0.25, 0.5)), row("hf_b", (0.1, 1.0))])
    assert text.count("workload  eager µs") == 2
    assert "≤0.25" in text and "≤0.1 " in text and "≤1.0" in text


def _timed_row(targets, eager, ours, theirs):
    def system(rounds):
        return {"capture_ms": 1.0 if rounds is ours else 20.0, "per_call_us_rounds": rounds, "error": None,
                "overhead_us": run._paired_overhead(rounds, eager)}

    row = {"name": "w", "eager_us": 1.0, "targets": dict(zip(("capture_ms", "overhead_us"), targets)),
           "systems": {"bytegraph": system(ours), "torch.compile": system(theirs)}}
    run.judge(row)
    return row


def test_a_per_call_target_of_one_pairs_the_two_systems_round_by_round():
    # bytegraph faster than torch.compile in three rounds of five, slower in two by more: the
    # median of the paired differences says faster, the difference of the two overheads' medians
    # (each paired with eager) says slower
    eager = [100.0] * 5
    theirs = [100.0, 110.0, 120.0, 130.0, 140.0]
    ours = [t + d for t, d in zip(theirs, [50.0, -5.0, -5.0, -5.0, 50.0])]
    assert run._paired_overhead(ours, eager) > run._paired_overhead(theirs, eager)
    row = _timed_row((0.1, run.SAME_SPEED), eager, ours, theirs)
    assert row["per_call_difference_us"] == -5.0
    assert row["overhead_us_verdict"] == "PASS"
    slower = _timed_row((0.1, run.SAME_SPEED), eager, [t + 1.0 for t in theirs], theirs)
    assert slower["per_call_difference_us"] == 1.0 and slower["overhead_us_verdict"] == "FAIL"
    table = run.format_table([row])
    assert "bg-tc µs" in table and "-5.0" in table and "in the same round" in table


def test_other_per_call_targets_stay_a_ratio_of_overheads():
    eager = [100.0] * 3
    row = _timed_row((0.25, 0.5), eager, [115.0] * 3, [130.0] * 3)
    assert row["overhead_us_ratio"] == 0.5 and row["overhead_us_verdict"] == "PASS"
    row = _timed_row((0.25, 0.5), eager, [118.0] * 3, [130.0] * 3)
    assert row["per_call_difference_us"] == -12.0
    assert row["overhead_us_ratio"] == 0.6 and row["overhead_us_verdict"] == "FAIL"
