"""The pure parts of `make sweep` (bench.sweep_shrink, bench.sweep_catalogue, bench.sweep): a
shrunk config keeps the sweep's limits, sub-configs are shrunk recursively, the catalogue is the
AutoModel mappings', and the markdown merge keeps other versions' sections. No model is built."""
import pytest

transformers = pytest.importorskip("transformers")

from bench import sweep, sweep_catalogue  # noqa: E402
from bench.sweep_shrink import LIMITS, kind_of, shrink  # noqa: E402


def _assert_tiny(config):
    assert config.num_hidden_layers <= LIMITS["layers"]
    assert config.hidden_size <= 64
    assert config.hidden_size % config.num_attention_heads == 0
    assert config.intermediate_size <= 128
    if getattr(config, "vocab_size", None) is not None:
        assert config.vocab_size <= 1000
    if getattr(config, "max_position_embeddings", None) is not None:
        assert config.max_position_embeddings <= LIMITS["positions"]


def test_shrink_caps_every_size_and_rederives_what_depends_on_them():
    big = transformers.LlamaConfig(num_key_value_heads=8)
    small = shrink(big)
    assert type(small) is transformers.LlamaConfig
    _assert_tiny(small)
    assert small.num_attention_heads % small.num_key_value_heads == 0
    assert small.head_dim * small.num_attention_heads == small.hidden_size
    assert big.num_hidden_layers == 32  # the original is untouched


def test_grouped_and_full_key_value_heads_stay_so():
    full = shrink(transformers.LlamaConfig())  # kv heads = query heads
    assert full.num_key_value_heads == full.num_attention_heads
    grouped = shrink(transformers.LlamaConfig(num_key_value_heads=8))
    assert grouped.num_key_value_heads < grouped.num_attention_heads


def test_sub_configs_are_shrunk_recursively():
    config = shrink(transformers.LlavaConfig())
    _assert_tiny(config.text_config)
    _assert_tiny(config.vision_config)
    assert config.vision_config.image_size <= LIMITS["image"]
    assert config.vision_config.image_size % config.vision_config.patch_size == 0
    # the image token lies inside the text model's shrunk vocabulary
    assert config.image_token_id < config.text_config.vocab_size


def test_per_layer_lists_follow_the_layer_count():
    config = shrink(transformers.Gemma3TextConfig())
    assert len(config.layer_types) == config.num_hidden_layers == LIMITS["layers"]


def test_encoder_decoder_names():
    config = shrink(transformers.WhisperConfig())
    assert config.encoder_layers == config.decoder_layers == LIMITS["layers"]
    assert config.d_model <= 64 and config.d_model % config.encoder_attention_heads == 0
    assert config.encoder_ffn_dim <= 128
    assert max(config.pad_token_id, config.decoder_start_token_id) < config.vocab_size


@pytest.mark.parametrize("name, kind", [("num_hidden_layers", "layers"), ("n_layer", "layers"),
                                        ("encoder_layers", "layers"), ("d_model", "hidden"), ("n_embd", "hidden"),
                                        ("num_key_value_heads", "kv_heads"), ("encoder_attention_heads", "heads"),
                                        ("moe_intermediate_size", "intermediate"), ("vocab_size", "vocab"),
                                        ("max_source_positions", "positions"), ("n_routed_experts", "experts"),
                                        ("hidden_act", None), ("rms_norm_eps", None)])
def test_attribute_names_map_to_size_kinds(name, kind):
    assert kind_of(name) == kind


def test_catalogue_is_the_auto_mappings():
    from transformers.models.auto.modeling_auto import MODEL_MAPPING_NAMES

    found = sweep_catalogue.architectures()
    assert found["llama"] == "LlamaModel" and found["bert"] == "BertModel"
    assert set(MODEL_MAPPING_NAMES) <= set(found)
    assert not set(found) & set(sweep_catalogue.config_only())


def test_merge_keeps_other_sections():
    old = sweep.merge("", {"transformers 5.24.0": "## transformers 5.24.0\nold\n", "torch.nn": "## torch.nn\nnn\n"})
    new = sweep.merge(old, {"transformers 5.25.0": "## transformers 5.25.0\nnew\n",
                            "torch.nn": "## torch.nn\nnn again\n"})
    assert "old" in new and "new" in new and "nn again" in new and "\nnn\n" not in new
    assert new.count("## transformers 5.24.0") == 1


def test_nn_constructor_arguments_come_from_the_signature():
    import torch

    from bench import sweep_nn

    assert sweep_nn.construct(torch.nn.Linear).in_features == sweep_nn.ARGS["in_features"]
    lstm = sweep_nn.construct(torch.nn.LSTM)  # `*args` forwarded to RNNBase, which passes `mode`
    assert (lstm.mode, lstm.input_size) == ("LSTM", sweep_nn.ARGS["input_size"])
    assert sweep_nn.construct(torch.nn.Upsample).size is None
    assert sweep_nn.construct(torch.nn.Upsample, every_known=True).size == sweep_nn.ARGS["size"]
    with pytest.raises(TypeError, match="no small value for constructor parameter 'mode'"):
        sweep_nn.construct(torch.nn.RNNBase)
    assert "Linear" in sweep_nn.modules() and "Module" in sweep_nn.modules()


def test_merge_orders_newest_transformers_first_then_torch_nn():
    doc = sweep.merge("", {t: f"## {t}\n" for t in ["torch.nn", "transformers 5.9.0", "transformers 5.24.0"]})
    titles = [line[3:] for line in doc.splitlines() if line.startswith("## ")]
    assert titles == ["transformers 5.24.0", "transformers 5.9.0", "torch.nn"]


def test_one_graph_needs_outputs_equal_to_eagers_for_both_systems():
    counts = dict(bg_graphs=1, bg_breaks=0, bg_eager_frames=0, tc_graphs=1, tc_breaks=0)
    both_right = sweep.Row("a", bg_correct=True, tc_correct=True, **counts)
    both_differ = sweep.Row("b", bg_correct=False, bg_same_as_tc=True, tc_correct=False, **counts)
    before_tc_was_compared = sweep.Row("c", bg_correct=True, **counts)
    assert both_right.bg_one_graph and both_right.tc_one_graph
    assert not both_differ.bg_one_graph and not both_differ.tc_one_graph
    assert before_tc_was_compared.tc_one_graph
    table_row = sweep.row_markdown(both_differ)
    assert "| as tc | 1 | 0 |" in table_row and "| **NO** | 1 | 0 |" in table_row
    assert table_row.count("|") == sweep.TABLE_HEAD.splitlines()[0].count("|")
    summary = sweep.section("t", [both_right, both_differ])
    assert "one graph: bytegraph **1**, torch.compile **1**" in summary
    assert "differing from eager 1, of which equal to torch.compile's outputs 1" in summary
