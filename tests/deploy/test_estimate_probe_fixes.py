"""Defects a read-only probe of ``neuroedge estimate`` found on real models, each with its
smallest failing input: TorchScript leaf modules, MKLDNN tensors, reused modules'
activations, the sample count, int8 under autocast, the root's own ops in the layer rows,
ONNX checks, messages for transformer inputs, and the minor ones (the ``.grad`` warning,
``--profiles ""``, batch norm in eval)."""
import math
import warnings

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from deploy.cli import main
from deploy.estimate import estimate
from sim.errors import ModelError

CPU = torch.device("cpu")   # estimate counts on a copy on the CPU (the engine's device there)


def _macs(est, profile="a100"):
    return est.ledgers[profile].total_ops().get("mac_fp32", 0)


# -- 1. TorchScript modules with no child modules ------------------------------------------
def _conv_net():
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(),
                         nn.Linear(8 * 6 * 6, 10)).eval()


# Conv2d(3, 8, 3) on 8 x 8: 8 x 6 x 6 outputs x 27 taps = 7,776 MACs a sample; Linear 288 x 10
# = 2,880; a batch of 2: 2 x (7,776 + 2,880) = 21,312
CONV_NET_MACS = 21_312


def test_scripted_and_traced_single_layers_are_priced():
    x = torch.zeros(2, 4, device=CPU)
    for m in (torch.jit.script(nn.Linear(4, 3)), torch.jit.trace(nn.Linear(4, 3), x)):
        # 2 samples x 4 inputs x 3 outputs = 24 MACs, as the Python Linear counts
        assert _macs(estimate(m, x, profiles=["a100"])) == 24


def test_frozen_and_loaded_frozen_torchscript_is_priced(tmp_path):
    x = torch.randn(2, 3, 8, 8, device=CPU)
    frozen = torch.jit.freeze(torch.jit.script(_conv_net()))
    assert _macs(estimate(frozen, x, profiles=["a100"])) == CONV_NET_MACS
    torch.jit.save(frozen, str(tmp_path / "frozen.pt"))
    loaded = torch.jit.load(str(tmp_path / "frozen.pt"))
    assert _macs(estimate(loaded, x, profiles=["a100"])) == CONV_NET_MACS


# -- 2. MKLDNN tensors ----------------------------------------------------------------------
class _ToMkldnn(nn.Module):
    def forward(self, x):
        return torch.relu(x.to_mkldnn()).to_dense() * 2


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN in this torch")
def test_mkldnn_tensors_count_as_dense():
    est = estimate(_ToMkldnn(), torch.randn(1, 3, 8, 8, device=CPU), profiles=["a100"])
    led = est.ledgers["a100"]
    # relu on the MKLDNN tensor and the product: 192 elements each, one op per element
    assert led.total_ops()["flop_fp32"] == 2 * 192
    assert not est.uncounted
    # 4 ops (to_mkldnn, relu, to_dense, mul), each reading and writing 192 x 4 B = 768 B
    # (the scalar 2 is no tensor)
    assert led.total_bytes("infer")[("offchip", "read")] == 4 * 768
    assert led.total_bytes("infer")[("offchip", "write")] == 4 * 768


@pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="no oneDNN in this torch")
def test_optimize_for_inference_oneDNN_ops_are_refused_in_one_line():
    """Its convolution runs as prim::mkldnn_convolution, which torch runs outside its
    dispatcher: it crashed the cost engine, and counted it would be silently missing
    (15,552 of 21,312 MACs)."""
    x = torch.randn(2, 3, 8, 8, device=CPU)
    m = torch.jit.optimize_for_inference(torch.jit.script(_conv_net()))
    with pytest.raises(ModelError, match="prim::mkldnn_convolution on MKLDNN-layout") as info:
        estimate(m, x, profiles=["a100", "cortex-m7"])
    assert "\n" not in str(info.value) and "before optimize_for_inference" in str(info.value)


# -- 3. every call's output in the activations ---------------------------------------------
class _Loop(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.act = nn.ReLU()

    def forward(self, x):
        for _ in range(10):
            x = self.act(self.fc(x))
        return x


def test_a_reused_modules_outputs_count_every_call():
    est = estimate(_Loop(), torch.randn(1, 16, device=CPU), profiles=["cortex-m7"])
    rows = {r.name: r for r in est.layers}
    # 10 calls x [1, 16] x 4 B = 640 B each, as the MACs column sums 10 x 256 = 2,560
    assert (rows["fc"].output_bytes, rows["fc"].infer_macs) == (640, 2_560)
    assert rows["act"].output_bytes == 640
    line = next(ln for ln in str(est).splitlines() if "every leaf layer's output" in ln)
    assert line.endswith("every leaf layer's output: 1.28 kB")    # 640 + 640 B
    # the arena is traced apart: the input and one 64 B output alive at each op, aligned
    assert est.memory["cortex-m7"]["arena_bytes"] == 128


# -- 4. the sample count --------------------------------------------------------------------
def test_sequence_first_recurrent_input_counts_samples_on_dim_1():
    torch.manual_seed(0)
    x = torch.randn(50, 2, 6, device=CPU)    # (T, B, features): nn.LSTM's default layout
    first = estimate(nn.LSTM(6, 8), x, profiles=["a100"])
    torch.manual_seed(0)
    batch = estimate(nn.LSTM(6, 8, batch_first=True), x.transpose(0, 1).contiguous(),
                     profiles=["a100"])
    assert first.inference_samples == batch.inference_samples == 2
    assert _macs(first) == _macs(batch)
    # the same work a sample (batch_first adds a transposing copy and its launch): within
    # 25%, where dim 0 (50 "samples") gave 40x too little
    ratio = first.per_inference_j("a100") / batch.per_inference_j("a100")
    assert 0.75 < ratio < 1.25
    notes = [n for n in first.notes if n.startswith("samples:")]
    assert len(notes) == 1 and "dim 1" in notes[0] and "batch_first=False" in notes[0]
    assert not any(n.startswith("samples:") for n in batch.notes)


def test_sequence_first_transformer_and_attention_count_samples_on_dim_1():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32), 1)
    est = estimate(enc, torch.randn(7, 3, 16, device=CPU), profiles=["a100"])
    assert est.inference_samples == 3

    class Attend(nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = nn.MultiheadAttention(16, 2)

        def forward(self, x):
            return self.mha(x, x, x)[0]
    est = estimate(Attend(), torch.randn(7, 3, 16, device=CPU), profiles=["a100"])
    assert est.inference_samples == 3 and any("dim 1" in n for n in est.notes)


def test_an_unbatched_input_is_one_sample():
    est = estimate(nn.Linear(4, 3), torch.randn(4, device=CPU), profiles=["a100"])
    assert est.inference_samples == 1
    assert any(n.startswith("samples:") and "one sample" in n for n in est.notes)
    assert _macs(est) == 12     # 4 inputs x 3 outputs, one sample


def test_a_batch_of_0_is_refused_as_on_the_command_line():
    with pytest.raises(ModelError, match="0 samples") as info:
        estimate(nn.Linear(4, 3), torch.randn(0, 4, device=CPU), profiles=["a100"])
    assert "\n" not in str(info.value)
    with pytest.raises(ModelError, match="0 samples"):
        estimate(nn.LSTM(6, 8), torch.randn(5, 0, 6, device=CPU), profiles=["a100"])


# -- 5. int8 re-types every float precision -------------------------------------------------
class _Autocast(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = self.fc(x)
        return self.fc2(y.float())


def test_int8_prices_work_under_autocast_as_int8():
    est = estimate(_Autocast(), torch.randn(2, 16, device=CPU), profiles=["a100", "cortex-m7"],
                   dtype="int8")
    ops = est.ledgers["cortex-m7"].total_ops()
    # bf16 fc 2 x 16 x 16 = 512 and fp32 fc2 2 x 16 x 4 = 128 MACs, all int8
    assert ops["mac_int8"] == 640
    assert not [k for k in ops if k.endswith(("bf16", "fp16", "fp32", "fp64"))]
    assert "cortex-m7" in est.reports and not est.skipped
    assert any("bf16" in n and "int8" in n for n in est.notes)


# -- 6. the root's own ops get a row --------------------------------------------------------
class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(16, 48)
        self.o = nn.Linear(16, 16)

    def forward(self, x):
        q, k, v = self.qkv(x).view(2, 7, 3, 4, 4).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v)
        return self.o(a.transpose(1, 2).reshape(2, 7, 16))


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.b = _Block()
        self.pos = nn.Parameter(torch.randn(7, 16))
        self.head = nn.Parameter(torch.randn(16, 10))

    def forward(self, x):
        return self.b(x + self.pos) @ self.head


def test_rows_add_up_to_the_total_with_the_roots_own_ops():
    torch.manual_seed(0)
    est = estimate(_Net(), torch.randn(2, 7, 16, device=CPU), profiles=["a100"], loss="auto")
    rows = est.layer_rows(depth=1)
    total, body = rows[0], rows[1:]
    assert [r.name for r in body] == ["b", "(root)"]
    own = body[-1]
    # y @ head: 14 rows x 16 x 10 = 2,240 MACs; training: the forward 2,240, the gradients
    # of y and of head 2 x 2,240 (the loss and the optimizer step have no MACs)
    assert (own.infer_macs, own.train_macs) == (2_240, 6_720)
    assert own.parameters == 7 * 16 + 16 * 10      # pos and head, the root's own
    assert sum(r.infer_macs for r in body) == total.infer_macs == 19_712
    assert sum(r.train_macs for r in body) == total.train_macs
    assert sum(r.parameters for r in body) == total.parameters
    for infer in (True, False):
        energy = [r.infer_energy_j if infer else r.train_energy_j for r in body]
        whole = total.infer_energy_j if infer else total.train_energy_j
        assert math.isclose(sum(energy), whole, rel_tol=1e-9)
    assert "(root: ops in _Net.forward itself" in str(est)


def test_the_root_row_of_a_model_with_no_op_of_its_own_holds_the_run_wide_charges():
    """It was left out, and with it the energy pricing charges the inference as a whole
    (static power, the weights read once): the rows no longer added up to the total."""
    est = estimate(nn.Sequential(nn.Linear(4, 8), nn.ReLU()), torch.randn(2, 4, device=CPU),
                   profiles=["a100"])
    assert [r.name for r in est.layers] == ["", "0", "1", "(root)"]
    root = est.layers[-1]
    assert (root.parameters, root.infer_macs) == (0, 0) and root.infer_energy_j > 0
    assert math.isclose(sum(r.infer_energy_j for r in est.layers[1:]),
                        est.layers[0].infer_energy_j, rel_tol=1e-12)


# -- 7. ONNX checks ---------------------------------------------------------------------------
class _SecondOnly(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, a, b):
        return self.fc(b)


class _NaN(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.log(-self.fc(x).abs() - 1)     # log of a negative number: NaN


class _DictOut(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return {"y": self.fc(x), "z": self.fc(x) * 2}


def test_onnx_inputs_are_fed_by_name_when_the_graph_drops_one(tmp_path):
    pytest.importorskip("onnxruntime")
    from deploy.onnx_export import check_onnx, export_onnx
    torch.manual_seed(0)
    xs = (torch.randn(2, 4, device=CPU), torch.randn(2, 4, device=CPU))
    m = _SecondOnly()
    # the graph keeps input1 alone; fed by position, b's values went to a (a false 1.42)
    path = export_onnx(m, xs, tmp_path / "m.onnx", check_inputs=xs)
    assert check_onnx(path, m, xs) < 1e-5


def test_onnx_nan_agrees_only_where_torch_gives_nan_too(tmp_path):
    pytest.importorskip("onnxruntime")
    from deploy.errors import ExportError
    from deploy.onnx_export import check_onnx, export_onnx
    torch.manual_seed(0)
    x = torch.randn(2, 4, device=CPU)
    nan = _NaN()
    path = export_onnx(nan, x, tmp_path / "nan.onnx", check_inputs=x)   # NaN on both sides
    assert check_onnx(path, nan, x) == 0.0
    other = nn.Linear(4, 4)   # torch gives numbers where the file gives NaN
    with pytest.raises(ExportError, match="NaN on one side only") as info:
        check_onnx(path, other, x)
    assert "by up to 0 " not in str(info.value)


def test_onnx_dict_output_is_compared_in_a_stated_order(tmp_path):
    pytest.importorskip("onnxruntime")
    from deploy.onnx_export import check_onnx, export_onnx
    torch.manual_seed(0)
    x = torch.randn(2, 4, device=CPU)
    m = _DictOut()
    path = export_onnx(m, x, tmp_path / "d.onnx", check_inputs=x)
    assert check_onnx(path, m, x) < 1e-5


# -- 8. messages for inputs bound to the wrong parameter ------------------------------------
class _Cache:
    def get_seq_length(self):
        return 0


class _Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids, cache: "_Cache | None" = None):
        n = 0 if cache is None else cache.get_seq_length()
        return self.emb(input_ids) + n


class _EncoderDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None):
        if decoder_input_ids is None:
            raise ValueError("You must specify exactly one of input_ids or inputs_embeds")
        return self.emb(input_ids).sum(1) + self.emb(decoder_input_ids).sum(1)


def test_a_second_input_names_the_parameter_it_went_to():
    ids = torch.zeros(2, 3, dtype=torch.long, device=CPU)
    with pytest.raises(ModelError) as info:
        estimate(_Decoder(), (ids, ids), profiles=["a100"])
    text = str(info.value)
    assert "input 2 of shape (2, 3) went to _Decoder.forward's parameter 'cache'" in text
    assert "wrapper" in text and "docs/estimate.md" in text and "\n" not in text


def test_missing_decoder_inputs_are_named():
    ids = torch.zeros(2, 3, dtype=torch.long, device=CPU)
    with pytest.raises(ModelError, match="decoder_input_ids") as info:
        estimate(_EncoderDecoder(), ids, profiles=["a100"])
    assert "wrapper" in str(info.value)
    # given by keyword, it runs
    est = estimate(_EncoderDecoder(), {"input_ids": ids, "decoder_input_ids": ids},
                   profiles=["a100"])
    assert est.inference_samples == 2


def test_a_cache_object_in_the_example_dict_points_to_a_wrapper():
    ids = torch.zeros(2, 3, dtype=torch.long, device=CPU)
    with pytest.raises(ModelError, match=r"example_input\['cache'\] is a _Cache") as info:
        estimate(_Decoder(), {"input_ids": ids, "cache": _Cache()}, profiles=["a100"])
    assert "wrapper" in str(info.value)


def test_gpt2_second_input_names_its_cache_parameter():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=100, n_embd=16, n_layer=1, n_head=2,
                                  n_positions=16)
    gpt = transformers.GPT2Model(cfg).eval()
    ids = torch.randint(0, 100, (2, 8), device=CPU)
    with pytest.raises(ModelError, match="input 2 of shape .2, 8. went to GPT2Model.forward's "
                                         "parameter") as info:
        estimate(gpt, (ids, ids), profiles=["a100"])
    assert "wrapper" in str(info.value)


# -- 9. minor ---------------------------------------------------------------------------------
def test_torchscript_estimate_warns_of_no_non_leaf_grad():
    scripted = torch.jit.script(nn.Sequential(nn.Linear(4, 3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        est = estimate(scripted, torch.zeros(2, 4, device=CPU), profiles=["a100"])
    assert _macs(est) == 24


def test_empty_profiles_is_one_plain_line(tmp_path, capsys):
    (tmp_path / "lin.py").write_text("import torch.nn as nn\n\n\ndef make():\n"
                                     "    return nn.Linear(4, 3)\n")
    assert main(["estimate", f"{tmp_path / 'lin.py'}:make", "--input-shape", "2,4",
                 "--profiles", ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith("neuroedge: error:") and err.count("\n") == 1
    assert "--profiles" in err and "[" not in err and "profiles=" not in err
