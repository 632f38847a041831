"""DiffPC: predictive coding with ternary spikes, trained on NeuromorphicDevice.

Karlsson, Fianda & Kamarainen, "Difference Predictive Coding for Training Spiking Neural
Networks", ICLR 2026 (https://openreview.net/forum?id=iu9dbz2lB9): the DiffPC neuron
(Algorithm 1), its threshold schedules and Theorem 4.1 are in ``kernels.py``; PC's weight
rule (which Algorithm 1 leaves out) is used with one departure, below. Float PC
(``models/baselines/pc/model.py``) supplies weights, AdamW and the feed-forward pass, so
only the messaging differs between the two. Theorem 4.1: a cyclic cycle shrinks
``|xT - xA| < 2^(m+1)`` to ``< 2^(m+1-n)``.

Readings chosen where the paper is unclear
------------------------------------------
(The paper's text available to us does not define m, gamma or the weight-update timing,
and Algorithm 1 omits the weight update, so these are our readings.)

- Spiking ReLU uses ``>= 0`` (lets xA return to exactly 0 when it holds a power-of-two sum).
- A spike sent in step t is integrated in step t+1 (one-step latency, the engine's delay 1).
- ``m``: a config value (default 0: per-cycle changes stay below 2^(m+1) = 2 for
  inputs in [0, 1] and one-hot targets).
- Output layer: target clamped to the one-hot label, ``eT = y - xF`` sent down as error
  spikes; it sends no activity spikes. The first hidden layer gets its (constant)
  prediction from the clamped input in the feed-forward init and sends no error spikes
  (the input has no neurons to receive them).
- Weight update, once per iteration, through AdamW (``PCNet.step``): the paper keeps PC's
  rule ``W_l += alpha eT^l phi(xT^{l-1})^T`` (so not a reading); we use the pre-synaptic
  *announced* activity xA^{l-1} (what the synapse can rebuild from spikes) in place of
  ``phi(xT^{l-1})``: a departure from the paper, within 2^(m+1-n) per element after a
  cycle (a probe measured the W_2 gradient 1.0% apart on digits). Every figure in
  bench/RESULTS.md was measured with it.
- Defaults: n = 8, 15 cycles (T_iter = 120: DiffPC-L's 120 steps read as 15 PC steps x
  8 spike steps), gamma = 0.1 (PC's eta), m = 0; AdamW lr 1e-3, weight decay 1e-4 (the
  paper's values for m, gamma, lr, batch and epochs were not found).
- Training batches are fixed-size (one compiled engine); each epoch's shuffled remainder
  of fewer than ``batch_size`` samples is skipped.

Hardware mapping
----------------
One engine population per layer, a custom :class:`NeuronKernel` of two compartments per
neuron: rows ``[0, B*K)`` hold the state and send activity spikes, rows ``[B*K, 2*B*K)``
are the error port (its own axon, so activity and error spikes travel separately; it
costs an extra neuron update per step). ``B`` independent copies of the network (one per
sample in the batch, block-diagonal synapses) run in one engine call, as the chip would
run B network copies side by side. Spikes are ternary, as the paper's: the payload is the
sign ``s`` alone (+-1, 2 bits), the synapse weight ``W 2^(m-n+1)``, and the receiver scales
its input by the sending step's ``2^(n-1-k)``, which it knows from the shared clock, so
weight x sign x scale = ``W s T(t)`` (a shift, exact: bit for bit what a graded payload
carrying the power of two delivered). Under the decay schedules the receiver also
multiplies by the known ``d(tau)`` of the sending step (a multiply, not a shift). Weights
are stored as floats (``compile(quantize=False)``, as the paper
trains in PyTorch); every batch's new weights are written into both the forward and the
transposed copy with ``update_weights`` (counted as ``syn_update``); the first layer's
weights (no engine synapses: its input is clamped) are counted as B x K_0 x K_1 updates
(``NeuromorphicDevice.count_synapse_writes``). Between batches the device's public state
methods reset the network: ``clear_in_flight`` (no spike of the previous batch arrives),
``set_custom_state`` (the feed-forward initialisation), ``custom_state`` (read back).
Each iteration is one ``run`` call, and the engine runs all its steps inside numba (its
compiled loop for custom-kernel populations, ``sim/neuromorphic/custom_loop.py``): no
Python call per step. ``loop="python"`` (one step per Python iteration) is the reference
the compiled loop is tested against, with identical counts.

The learning step (counted as float PC's)
-----------------------------------------
The weight gradients and AdamW (``PCNet.step``, the very code float PC runs) execute in
torch inside ``TorchDevice.count`` on a host device, so they are counted by the torch
engine exactly as PC's step is: the gradient's ``B x K_l x K_(l-1)`` multiply-accumulates,
the batch means, AdamW's element-wise updates, and their bytes. Two hardware readings of
where that step runs are offered, and the comparison (``experiment.py``)
shows both:

- **chip** (the run's own ledger, what ``neuroedge simulate diffpc`` prices): the chip's
  learning engine runs the step, each arithmetic operation the torch engine counted for it
  (the ``compute`` ops: multiply-accumulates, flops, integer ops) being one ``syn_update``
  (one rule evaluation on a synapse's variables) in scope ``train/learn/rule``; the host's
  ``kernel_launch`` counts are how torch dispatches the step, not rule evaluations, and are
  left out. This is an idealised learning engine: published neuromorphic
  learning rules are sums of products of synaptic variables and traces (Davies et al. 2018,
  IEEE Micro 38(1), section "Learning"), so AdamW's square root and division are not among
  them; the reading prices the step's operation count at the chip's learning-update energy.
- **host** (``DiffPCClassifier.host_ledger``): a host processor attached to the chip runs
  the step, priced on a GPU/CPU profile, the same profile float PC's whole training is
  priced on; the chip then only receives the new weights (the ``train/learn`` rewrites),
  and ``train/learn/rule`` is left out. The host device is ``sim.device(HOST_PROFILE,
  prefer_cuda=False)``: its counts do not depend on the profile.

Not run through the engine (counted analytically, see ``_count_ff``): the feed-forward
initialisation (one graded-spike sweep: a spike per non-zero activity, one synop per
target) and test-time inference (the same sweep). Router hops are not counted for them.
Inference's NeuroBench activity (``_ff_activity``) is recorded as the engine records a
run's, under ``infer/h<l>`` per population, reading the sweep as one time step of the
network ``Linear, ReLU, ..., Linear`` that ``PCNet.feedforward`` computes: per connection
layer, Dense = its inputs x weights, the non-zero input x non-zero weight pairs are
Effective_ACs where every input of the layer is 0 or +-1 (NeuroBench's spiking test, as the
torch engine's) and Effective_MACs otherwise (graded payloads are multiplied); the
activations are the hidden neurons' ``phi(mu)`` (a zero sends no spike); the output layer
is a linear read-out (no ``phi``, it sends no spike), so not a neuron layer of
ActivationSparsity, as NeuroBench leaves out a network's last Linear; every hidden and
output neuron makes one membrane update (the ledger's ``neuron_update_active``).

Communication metric: bits per neuron per sample = (2 bits per ternary spike of the
spiking iteration, the paper's count, + ``FF_PAYLOAD_BITS`` per real-valued message of the
feed-forward initialisation: the float32 activity ``PCNet.feedforward`` computes, which
fits Loihi 2's 32-bit graded payload) / (hidden + output neurons) / training samples.
"""
from __future__ import annotations

import numpy as np
import torch

import sim
from hw_profiles.ops import OPS
from models.baselines.pc.model import PCNet, pcnet_trained
from models.diffpc.card import SCHEDULES, DiffPCConfig
from models.diffpc.kernels import KERNEL, STATE
from models.registry import Progress, Trained
from models.shared.checks import all_finite, check_xy, optimizer_overflow_is_config_error
from sim import seeds
from sim.errors import ModelError
from sim.neuromorphic import Network, NeuromorphicDevice

FF_PAYLOAD_BITS = 32   # the float32 activity each feed-forward message carries
HOST_PROFILE = "x86-avx2"   # names the host device counts are made on; counts do not depend
#                            on it, the comparison prices the host ledger on each profile


class DiffPCNetwork:
    """B copies of a DiffPC network compiled on a NeuromorphicDevice.

    Parameters
    ----------
    net : PCNet holding the weights (read on build and by ``push_weights``)
    batch : B, samples run side by side
    config : DiffPCConfig
    device : NeuromorphicDevice
    loop : the engine's step loop, ``"compiled"`` (all steps of an iteration in one numba
        call) or ``"python"`` (one step per Python iteration: the reference, same counts)
    """

    def __init__(self, net: PCNet, batch: int, config: DiffPCConfig,
                 device: NeuromorphicDevice, loop: str = "compiled"):
        self.net, self.B, self.cfg, self.dev = net, int(batch), config, device
        self.loop = loop
        cfg = config
        bits = device.profile.limit("spike_payload_bits")
        lo, hi = device.profile.payload_range()
        if lo > -1 or hi < 1:   # -1 spikes need a signed payload of 2 bits
            carries = ("binary spikes only (no spike_payload_bits)" if bits is None else
                       f"{int(bits)}-bit payloads (no sign)")
            raise ModelError(f"profile {device.profile.name!r} has {carries}; DiffPC's "
                             "ternary spikes (+-1) need a profile with signed payloads of "
                             "2 bits or more, e.g. loihi2")
        self.scale = cfg.const_c if cfg.schedule == "constant-decay" \
            else 2.0 ** (cfg.m - cfg.n + 1)
        sizes, B = net.sizes, self.B
        nw = Network(dt=1e-3)
        sched = SCHEDULES.index(cfg.schedule)
        a = 1.0 if cfg.schedule == "cyclic" else cfg.decay_a
        for layer in range(1, len(sizes)):
            out = layer == len(sizes) - 1
            nw.population(f"h{layer}", 2 * B * sizes[layer], KERNEL, gamma=cfg.gamma,
                          ncyc=cfg.n, m=cfg.m, clamped=float(out), emit_err=float(layer > 1),
                          sched=sched, a=a, T_iter=cfg.steps, c=cfg.const_c)
        self.index = {}
        for layer in range(2, len(sizes)):
            ki, ko = sizes[layer - 1], sizes[layer]
            s, i, j = (g.ravel() for g in np.meshgrid(np.arange(B), np.arange(ko),
                                                      np.arange(ki), indexing="ij"))
            w = np.tile(net.W[layer - 1].cpu().numpy().ravel(), B) * self.scale
            nw.connect(f"h{layer - 1}", f"h{layer}", w, pre_idx=s * ki + j,
                       post_idx=s * ko + i, channel=0, name=f"fwd{layer}")
            nw.connect(f"h{layer}", f"h{layer - 1}", w, pre_idx=B * ko + s * ko + i,
                       post_idx=s * ki + j, channel=1, name=f"bwd{layer}")
            self.index[layer] = w / self.scale
        # NeuroBench's static metrics are the model's (the PCNet's weights and biases, as
        # the mlp baseline's), not the chip's B x 2 synapse copies: those made
        # ParameterCount and Footprint grow with the batch size (20,480 at batch 32,
        # 10,240 at 16, for 2,410 parameters)
        nw.model_facts = self._model_facts()
        self._nw = nw
        device.compile(nw, quantize=False)
        self.spikes = {"act": 0, "err": 0, "ff": 0}
        self.last_spikes: dict[str, tuple] = {}

    def _model_facts(self) -> dict[str, int]:
        """NeuroBench's model facts of the PCNet: every weight and bias its parameters (as
        stored), its weights the connection weights, with the zeros among them now."""
        W, b = self.net.W, self.net.b
        return dict(parameters=sum(t.numel() for t in W + b),
                    parameter_bytes=sum(t.numel() * t.element_size() for t in W + b),
                    buffer_bytes=0, connection_weights=sum(t.numel() for t in W),
                    connection_zero_weights=sum(int((t == 0).sum()) for t in W))

    def push_weights(self, scope: str = "train/learn") -> None:
        """Write the PCNet's current weights into both synapse copies (syn_update)."""
        # before update_weights, which records the model facts again (the zeros changed)
        self._nw.model_facts = self._model_facts()
        for layer, old in self.index.items():
            new = np.tile(self.net.W[layer - 1].cpu().numpy().ravel(), self.B)
            delta = (new - old) * self.scale
            self.dev.update_weights(f"fwd{layer}", delta, scope=scope)
            self.dev.update_weights(f"bwd{layer}", delta, scope=scope)
            self.index[layer] = new
        # W_1 (input -> first hidden) has no engine synapses: the clamped input's
        # feed-forward sweep is counted by _count_ff. Its B copies are still rewritten on
        # the chip every batch, so their updates are counted here (every weight changes
        # under AdamW).
        self.dev.count_synapse_writes(self.B * self.net.sizes[0] * self.net.sizes[1],
                                      scope=scope)

    def iterate(self, x: np.ndarray, y1h: np.ndarray, scope: str = "train") -> dict:
        """One training iteration (FF init + ``cfg.steps`` spiking steps) for B samples.

        Returns per layer l >= 1 the (B, K_l) arrays ``xT, xA, xF, eT, eA, b``.
        """
        net, dev, B, sizes = self.net, self.dev, self.B, self.net.sizes
        x, y1h = np.asarray(x, np.float64), np.asarray(y1h, np.float64)
        if x.shape != (B, sizes[0]) or y1h.shape != (B, sizes[-1]):
            raise ModelError(f"[DiffPCNetwork.iterate] x {x.shape} and y1h {y1h.shape}; "
                             f"expected ({B}, {sizes[0]}) and ({B}, {sizes[-1]}): the engine "
                             f"was compiled for batches of {B}")
        with torch.no_grad():
            mus = net.feedforward(torch.as_tensor(x, dtype=torch.float32,
                                                  device=net.W[0].device))
        mus = [m.cpu().double().numpy() for m in mus]
        if not all(np.isfinite(m).all() for m in mus):   # numpy, before anything is counted
            raise ModelError(f"DiffPCConfig lr = {self.cfg.lr}, gamma = {self.cfg.gamma}: "
                             "training diverged (non-finite feed-forward states from "
                             "overflowing weights); expected a smaller lr or gamma (defaults "
                             "1e-3, 0.1)")
        self.spikes["ff"] += _count_ff(dev, mus, scope=f"{scope}/ffinit")
        dev.clear_in_flight()      # no spike of the previous batch is still in flight
        for layer in range(1, len(sizes)):
            h = B * sizes[layer]
            mu = mus[layer].ravel()
            # rows [0, h) are the neurons' state compartments; the error ports stay 0
            rows = {"xF": mu}
            if layer == len(sizes) - 1:
                rows["xT"] = y1h.ravel()                        # clamped target
            else:
                rows["xT"] = mu
                rows["xA"] = np.maximum(mu, 0.0)                # xA = phi(xT)
            dev.set_custom_state(f"h{layer}", {k: np.concatenate([v, np.zeros(h)])
                                               for k, v in rows.items()}, reset=True)
        res = dev.run(self.cfg.steps, scope=scope, loop=self.loop)
        # the iteration's spikes per layer, (steps from the iteration's first step, rows,
        # signed graded payloads): what a replay of this activity needs (bench/sanafe_compare)
        self.last_spikes = {}
        for k in range(1, len(sizes)):
            st, rows, pay = res.spikes[f"h{k}"]
            self.last_spikes[f"h{k}"] = (st - res.t0, rows, pay)
        out = {}
        for layer in range(1, len(sizes)):
            name, h = f"h{layer}", B * sizes[layer]
            st = dev.custom_state(name)
            out[layer] = {v: st[v][:h].reshape(B, sizes[layer]) for v in STATE[:-1]}
            idx = res.spikes[name][1]
            n_err = int(np.count_nonzero(idx >= h))
            self.spikes["act"] += idx.size - n_err
            self.spikes["err"] += n_err
        return out


def _count_ff(dev: NeuromorphicDevice, mus: list[np.ndarray], scope: str) -> int:
    """Feed-forward sweep as graded spikes: one per non-zero presynaptic activity, one
    synop per target, one active update per neuron (counted, not simulated).

    Returns the number of messages (graded spikes) sent."""
    spikes = synops = 0
    for layer in range(len(mus) - 1):
        act = mus[layer] if layer == 0 else np.maximum(mus[layer], 0.0)
        nz = int(np.count_nonzero(act))
        spikes += nz
        synops += nz * mus[layer + 1].shape[1]
    dev.ledger.add("spike", spikes, scope=scope)
    dev.ledger.add("synop", synops, scope=scope)
    dev.ledger.add("neuron_update_active", sum(m.size for m in mus[1:]), scope=scope)
    return spikes


def _ff_activity(ledger, mus: list[np.ndarray], weights: list[np.ndarray], scope: str) -> None:
    """NeuroBench activity of a feed-forward sweep (module docstring), under
    ``<scope>/h<l>``; ``weights[l - 1]`` is ``W_l``, (K_l, K_(l-1))."""
    last = len(mus) - 1
    for layer in range(1, last + 1):
        pre = mus[0] if layer == 1 else np.maximum(mus[layer - 1], 0.0)
        w = weights[layer - 1]
        where = f"{scope}/h{layer}"
        # non-zero input x non-zero weight: per input j, its non-zeros x column j's non-zeros
        pairs = int(np.count_nonzero(pre, axis=0) @ np.count_nonzero(w, axis=0))
        spiking = bool(np.all((pre == 0) | (np.abs(pre) == 1)))
        ledger.add_activity("effective_acs" if spiking else "effective_macs", pairs, scope=where)
        ledger.add_activity("dense_synops", pre.shape[0] * w.size, scope=where)
        ledger.add_activity("membrane_updates", mus[layer].size, scope=where)
        if layer < last:   # the output layer is a read-out, not a neuron layer
            ledger.add_activity("activations", mus[layer].size, scope=where)
            ledger.add_activity("activations_zero", int(np.count_nonzero(mus[layer] <= 0)),
                                scope=where)


class DiffPCClassifier:
    """DiffPC trained on a NeuromorphicDevice; weights and AdamW from PCNet."""

    def __init__(self, n_inputs: int, n_classes: int, config: DiffPCConfig,
                 device: NeuromorphicDevice, loop: str = "compiled"):
        self.config, self.device = config, device
        self.sizes = (n_inputs, *config.hidden, n_classes)
        # the same init and order streams as float PC's: one seed, the same weights
        self.net = PCNet(self.sizes, config.lr, config.weight_decay,
                         seeds.child(config.seed, "init"))
        self.engine = DiffPCNetwork(self.net, config.batch_size, config, device, loop=loop)
        # counts the learning step with the torch engine, as float PC's (module docstring)
        self.host = sim.device(HOST_PROFILE, prefer_cuda=False)
        self.history: list[dict] = []
        self.samples = 0

    def fit(self, x, y, progress: Progress | None = None):
        """Train; the last partial batch of each (shuffled) epoch is skipped."""
        check_xy(x, y, self.sizes[0], self.sizes[-1], "DiffPCClassifier.fit")
        cfg, B = self.config, self.config.batch_size
        if len(x) < B:
            raise ModelError(f"DiffPCClassifier.fit: {len(x)} samples < batch_size {B}")
        y1h = np.eye(self.sizes[-1])[y]
        # PCNet.step follows the schedule over the run's batches (partial ones are skipped)
        self.net.set_schedule(cfg.lr_schedule, cfg.epochs * (len(x) // B))
        shuffle = seeds.rng(cfg.seed, "order")   # one stream; a new permutation each epoch
        for epoch in range(cfg.epochs):
            order = shuffle.permutation(len(x))
            err = 0.0
            for s in range(0, len(x) - B + 1, B):
                idx = order[s:s + B]
                st = self.engine.iterate(x[idx], y1h[idx])
                pre = [torch.as_tensor(x[idx], dtype=torch.float32)] + \
                    [torch.as_tensor(st[k]["xA"], dtype=torch.float32)
                     for k in range(1, len(self.sizes) - 1)]
                eps = [None] + [torch.as_tensor(st[k]["eT"], dtype=torch.float32)
                                for k in range(1, len(self.sizes))]
                self.learn(pre, eps)
                # numpy, outside any count block (the ledger is unchanged): a diverged step
                # (e.g. lr = 1e6) is named here, before the engine is handed NaN weights
                if not all_finite(self.net.W + self.net.b):
                    raise ModelError(f"DiffPCConfig lr = {cfg.lr}, gamma = {cfg.gamma}: "
                                     f"training diverged in epoch {epoch + 1} (non-finite "
                                     "weights after AdamW); expected a smaller lr or gamma "
                                     "(defaults 1e-3, 0.1)")
                self.engine.push_weights()
                self.device.ledger.add_samples(B, scope="train")
                self.samples += B
                err += float((st[len(self.sizes) - 1]["eT"] ** 2).sum()) / 2
            rec = {"epoch": epoch + 1, "output_energy": err / (len(x) // B * B)}
            self.history.append(rec)
            if progress:
                progress(epoch + 1, cfg.epochs, rec)
        return self

    @property
    def host_ledger(self):
        """The learning step's torch counts (scope ``train``), for the host reading."""
        return self.host.ledger

    def learn(self, pre: list[torch.Tensor], eps: list[torch.Tensor]) -> None:
        """PC's weight rule and AdamW (``PCNet.step``), counted by the torch engine on the
        host ledger and, as learning-engine updates, on the chip (``train/learn/rule``)."""
        led = self.host.ledger
        before = led.total_ops()
        with optimizer_overflow_is_config_error("DiffPCConfig", self.config.lr, "AdamW"), \
                self.host.count("train", samples=len(eps[1])), torch.no_grad():
            self.net.step(pre, eps)
        # one syn_update per arithmetic op of the rule (category "compute"); kernel launches
        # ("overhead") are the host's dispatch of torch kernels, not evaluations of the rule
        rule = sum(n - before.get(op, 0) for op, n in led.total_ops().items()
                   if OPS[op] == "compute")
        self.device.ledger.add("syn_update", rule, scope="train/learn/rule")

    def evaluate(self, x, y, scope: str = "infer") -> dict[str, float]:
        check_xy(x, y, self.sizes[0], self.sizes[-1], "DiffPCClassifier.evaluate")
        with torch.no_grad():
            mus = self.net.feedforward(torch.as_tensor(x, dtype=torch.float32))
        states = [m.double().numpy() for m in mus]
        _count_ff(self.device, states, scope=scope)
        _ff_activity(self.device.ledger, states, [w.detach().double().numpy() for w in self.net.W],
                     scope)
        self.device.ledger.add_samples(len(x), scope=scope)
        return {"accuracy": float(np.mean(mus[-1].argmax(1).numpy() == y))}

    def comm(self) -> dict[str, float]:
        """Spikes and bits per neuron per training sample: 2 bits per ternary spike (the
        paper's count) + ``FF_PAYLOAD_BITS`` per feed-forward message (module docstring)."""
        neurons = sum(self.sizes[1:])
        sp = self.engine.spikes
        per = max(self.samples, 1) * neurons
        return {"spikes_per_neuron_per_sample": (sp["act"] + sp["err"]) / per,
                "error_spikes_per_neuron_per_sample": sp["err"] / per,
                "ff_messages_per_neuron_per_sample": sp["ff"] / per,
                "spike_bits_per_neuron_per_sample": 2.0 * (sp["act"] + sp["err"]) / per,
                "bits_per_neuron_per_sample":
                    (2.0 * (sp["act"] + sp["err"]) + FF_PAYLOAD_BITS * sp["ff"]) / per}

    def trained(self) -> Trained:
        """The weights and biases as plain arrays (what a run file stores)."""
        return pcnet_trained(self.net, self.sizes)
