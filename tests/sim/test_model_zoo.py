"""Model zoo: real architectures built from ``transformers`` configurations with random
weights (nothing downloaded), plus torch's own ``nn.Transformer``, run in inference and
training under the torch engine: no op goes uncounted, and the MACs equal
``torch.utils.flop_counter.FlopCounterMode`` (FLOPs / 2) plus, where FlopCounterMode has no
formula for the attention kernel the device picked (CPU flash), the attention's hand formula
``heads x Sq x Sk x (D + Dv)`` forward, ``heads x Sq x Sk x (3 D + 2 Dv)`` backward (Q K^T
recomputed, dQ, dK, dV, dP; see sim/torch_engine/costs.py), and less FlopCounterMode's
overcount of a grouped convolution's weight gradient (it sums over all input channels, not
the group's: ``groups - 1`` extra sums of N x positions per weight-gradient element)."""
import os

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from sim.torch_engine import TorchDevice

os.environ["HF_HUB_OFFLINE"] = "1"
transformers = pytest.importorskip("transformers")
aten = torch.ops.aten
_SDPA = {aten._scaled_dot_product_flash_attention_for_cpu,
         aten._scaled_dot_product_flash_attention_for_cpu_backward}


class _AttentionMacs(torch.utils._python_dispatch.TorchDispatchMode):
    """Hand formula for the attention kernels and the grouped GEMM FlopCounterMode does not
    count, and its grouped-convolution overcount taken off."""

    def __init__(self):
        super().__init__()
        self.macs = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func.overloadpacket in _SDPA:
            backward = "backward" in str(func)
            q, k, v = args[1:4] if backward else args[0:3]
            scores = q.shape[:-2].numel() * q.shape[-2] * k.shape[-2]
            d, dv = q.shape[-1], v.shape[-1]
            self.macs += scores * ((3 * d + 2 * dv) if backward else (d + dv))
        elif func.overloadpacket is aten._grouped_mm:
            # FlopCounterMode has no formula: each group's product from the offsets
            a, b, offs = args[0], args[1], args[2]
            if a.dim() == 3 and b.dim() == 3:
                self.macs += a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
            else:
                ends = offs.tolist()
                sizes = [e - s for s, e in zip([0] + ends[:-1], ends, strict=True)]
                for size in sizes:
                    if a.dim() == 2 and b.dim() == 3:      # rows split: tokens per expert
                        self.macs += size * a.shape[1] * b.shape[2]
                    elif a.dim() == 2:                    # K split
                        self.macs += a.shape[0] * size * b.shape[1]
                    else:                                  # columns split
                        self.macs += a.shape[1] * a.shape[2] * size
        elif func.overloadpacket is aten.convolution_backward:
            grad_out, x, transposed, groups, mask = args[0], args[1], args[7], args[9], args[10]
            if groups > 1 and mask[1]:
                # each weight-gradient element sums over the batch and the positions its
                # tap meets: the input's (transposed) or the output's (plain convolution)
                positions = (x if transposed else grad_out).shape[2:].numel()
                self.macs -= out[1].numel() * x.shape[0] * positions * (groups - 1)
        return out


def _text(name, cfg, **kw):
    return lambda: getattr(transformers, name)(getattr(transformers, cfg)(**kw)), "tokens"


_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)
ZOO = {
    "gpt2": _text("GPT2Model", "GPT2Config", n_embd=32, n_layer=2, n_head=2, vocab_size=100),
    "bert": _text("BertModel", "BertConfig", vocab_size=100, **_SMALL),
    "llama": _text("LlamaModel", "LlamaConfig", vocab_size=100, num_key_value_heads=1,
                   **_SMALL),
    "t5-encoder": _text("T5EncoderModel", "T5Config", vocab_size=100, d_model=32, d_kv=16,
                        d_ff=64, num_layers=2, num_heads=2),
    "distilbert": _text("DistilBertModel", "DistilBertConfig", vocab_size=100, dim=32,
                        n_layers=2, n_heads=2, hidden_dim=64),
    "vit": (lambda: transformers.ViTModel(transformers.ViTConfig(
        image_size=32, patch_size=8, **_SMALL)), "image"),
    "swin": (lambda: transformers.SwinModel(transformers.SwinConfig(
        image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[1, 2],
        window_size=4)), "image"),
    "convnext": (lambda: transformers.ConvNextModel(transformers.ConvNextConfig(
        num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], image_size=32)), "image"),
    "resnet": (lambda: transformers.ResNetModel(transformers.ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])), "image"),
    "mobilenetv2": (lambda: transformers.MobileNetV2Model(transformers.MobileNetV2Config(
        image_size=32, depth_multiplier=0.25)), "image"),
    "whisper-encoder": (lambda: transformers.WhisperModel(transformers.WhisperConfig(
        d_model=32, encoder_layers=2, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
        num_mel_bins=8, max_source_positions=16, vocab_size=100,
        pad_token_id=0, bos_token_id=1, eos_token_id=2,
        decoder_start_token_id=1)).encoder, "audio"),
    "mixtral (mixture of experts)": _text(
        "MixtralModel", "MixtralConfig", vocab_size=100, num_key_value_heads=1,
        num_local_experts=4, num_experts_per_tok=2, **_SMALL),
    "nn.Transformer": (lambda: torch.nn.Transformer(
        32, 2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=64,
        dropout=0.0, batch_first=True), "pair"),
}


def _input(kind, device):
    g = torch.Generator().manual_seed(0)
    if kind == "tokens":
        x = torch.randint(0, 100, (2, 8), generator=g)
    elif kind == "image":
        x = torch.randn(2, 3, 32, 32, generator=g)
    elif kind == "audio":
        x = torch.randn(2, 8, 32, generator=g)      # mel bins x 2 x max_source_positions
    else:
        x = torch.randn(2, 8, 32, generator=g)
    return x.to(device)


def _call(model, kind, x):
    out = model(x, x) if kind == "pair" else model(x)
    t = out if isinstance(out, torch.Tensor) else out[0]
    return t.float().sum()


@pytest.mark.parametrize("train", [False, True], ids=["infer", "train"])
@pytest.mark.parametrize("name", list(ZOO))
def test_zoo_counts_every_op_and_matches_flop_counter(toy_gpu_path, name, train):
    build, kind = ZOO[name]
    torch.manual_seed(0)
    dev = TorchDevice(toy_gpu_path)
    model = dev.compile(build().train(train))
    if train:   # dropout draws differ run to run, not the arithmetic; keep it deterministic
        for m in model.modules():
            if isinstance(m, torch.nn.Dropout):
                m.p = 0.0
    x = _input(kind, dev.torch_device)

    def step():
        with torch.set_grad_enabled(train):
            loss = _call(model, kind, x)
            if train:
                loss.backward()

    with dev.count("zoo"):
        step()
    assert dev.ledger.uncounted() == {}, name
    macs = sum(n for op, n in dev.ledger.total_ops().items() if op.startswith("mac_"))
    assert macs > 0
    # the same step outside the engine (fast path off, as the engine runs it)
    fast = torch.backends.mha.get_fastpath_enabled()
    torch.backends.mha.set_fastpath_enabled(False)
    try:
        with FlopCounterMode(display=False) as fc, _AttentionMacs() as hand:
            step()
    finally:
        torch.backends.mha.set_fastpath_enabled(fast)
    assert macs == fc.get_total_flops() // 2 + hand.macs, name
