"""Cost of one aten op: primitive-op counts and bytes, as small pure functions of shapes.

Counting conventions (the same on every profile):

- Matrix products and convolutions use **torch's own FLOP counter formulas**
  (``torch.utils.flop_counter.flop_registry``: multiply-add = 2 FLOPs); we record
  ``FLOPs / 2`` multiply-accumulates as ``mac_<dtype>``. One correction: torch's
  convolution backward counts the weight gradient of a grouped convolution as if it had one
  group (``groups`` times too many; a depthwise convolution's by its channel count), so
  that term is divided by ``groups`` (:func:`_conv_backward_flops`).
- Ops tagged ``pointwise`` by aten (add, relu, where, ...) and ``_foreach_*`` ops (the
  optimizers' fused list updates): one op per output element, ``flop_<dtype>``.
- Ops tagged ``reduction`` (sum, mean, argmax, ...): one op per input element.
- A few composite kernels with no tag get a stated per-element factor (``_PER_ELEMENT``).
- Views (``is_view``) and allocation without writes cost nothing (``FREE``).
- Data movement ops (copy, cat, gather, ...) cost bytes but no arithmetic (``MEMORY_ONLY``).
- Integer and boolean tensors count ``int_add`` (``int_cmp`` for comparisons) instead
  of ``flop_<dtype>``; integer products count ``mac_int8`` for 8-bit inputs, else
  ``int_mul`` + ``int_add`` per multiply-accumulate.
- Complex tensors count in real ops of their component precision (complex64 as fp32): a
  complex multiply-accumulate in a matrix product is 4 real ones (``mac_<dtype>``); the
  elementwise ops with a stated count per element (``_COMPLEX_OPS``: add 2, mul 6, div 11,
  abs 4, exp 5, ...) count those; other complex ops are uncounted. FFTs (``_fft_c2c``,
  ``_fft_r2c``, ``_fft_c2r``) count FFTW's 5 N log2 N real ops per complex transform of N
  points and 2.5 N log2 N per real one, plus the normalisation's scaling (``_FFTS``).
- Dense factorisations and solves (Cholesky, triangular solves, LU, solve, inv, det,
  slogdet, Cholesky solve, QR) count LAPACK Working Note 41's multiplications and additions
  of the routines ATen calls (``_LAPACK``, :func:`_lapack_ops`); iterative ones (eigh, svd,
  pinv, lstsq, matrix_exp) are uncounted.
- Sparse tensors (COO, CSR, CSC, BSR, BSC): a sparse times dense matrix product counts one
  MAC per stored value and dense column (row), a sparse tensor's bytes are its stored
  values and indices (``sparse_parts``); other ops with a sparse argument are uncounted
  unless ``_sparse_cost`` has a rule (construction, conversion, coalescing).
- Pooling: max pooling compares every window element (one op per output element and
  window position), its backward adds each output gradient once; average pooling adds every
  window element, its backward spreads each output gradient over its window.

Bytes (``_traffic``), to and from device memory (``offchip``), eager PyTorch with no fusion
and no cache hits:

- By default an op reads every distinct element of its tensor inputs (a broadcast input,
  a stride-0 view, is read once, not once per use) and writes all its outputs.
- Gathers read what they read: ``index``, ``index_select``, ``gather``, ``embedding`` and the
  ``*_copy`` forms of slicing read the selected elements plus the indices, not the source
  tensor (a 32-row batch ``x[idx]`` of 64 features reads 32 x 64 x 4 B + 32 x 8 B);
  ``embedding_bag`` reads one table row per index. Slicing, select and narrow are views
  (free); the copy that follows them (``clone``, ``contiguous``) reads only the view.
- In-place ops write the arguments their schema marks as written (``add_``'s ``self``, the
  ``self`` list of ``_foreach_add_``, ``out=``), so an in-place or ``_foreach_`` update counts
  the same writes as its out-of-place form. Ops that overwrite (``copy_``, ``fill_``, random
  fills, ``out=``) do not read the tensor they overwrite; ``*_like``/``new_*`` factories read
  nothing (only the shape); ``index_put_`` reads the values and indices and writes the
  indexed elements only.

Spatial transforms (``F.affine_grid`` / ``F.grid_sample``), counted as their kernels run:

- ``affine_grid_generator``: ATen fills a base grid of ``[x, y, 1]`` per output pixel and
  multiplies it by theta transposed in one ``bmm`` (N x HW x 3 by 3 x 2): 3 MACs per output
  coordinate, 6 per pixel (4-D; 12 per voxel for 5-D). Bytes: theta read, the base grid
  written and read back, the grid written. The two coordinate vectors (H + W values per
  call) are left out: 56 values against 2,352 base-grid floats per 28 x 28 image.
- ``grid_sampler_2d``, bilinear: per output pixel, each of the 2 coordinates unnormalised
  (``((g + 1) W - 1) / 2``: 4 ops; 3 with ``align_corners``: ``(g + 1) / 2 (W - 1)``), plus
  a clip (2 ops) with border padding, floored (2), the 4 corner weights (each 2 subtractions
  and a product: 12); 2 integer adds for the far corner's indices and 4 comparisons per
  corner for its bounds (16 ``int_cmp``); per output element 4 multiply-adds (weight times
  neighbour, ``mac``). Nearest: the coordinates, a rounding each (2), one bounds check (4
  ``int_cmp``), no arithmetic per element. Bytes: per output element 4 neighbours (1 for
  nearest) read, not the whole input (a gather, as above); the grid read; the output
  written. Bicubic and reflection padding have no rule (uncounted).

Attention (every fused ``scaled_dot_product_attention`` kernel: CPU flash
``_scaled_dot_product_flash_attention_for_cpu``, CUDA flash, memory-efficient and cuDNN, and
their backward ops), the same whichever kernel torch picked on a device: per head with
``Sq`` queries, ``Sk`` keys, ``D`` query/key and ``Dv`` value width, ``Sq Sk D`` MACs for
Q K^T and ``Sq Sk Dv`` for the weights times V, plus softmax at 5 ops per score
(``Sq Sk``), as ``_softmax``. Backward, as torch's FLOP counter: Q K^T recomputed (the fused
kernels keep only the log-sum-exp), dV, dP, dQ and dK, ``Sq Sk (3 D + 2 Dv)`` MACs, plus the
softmax backward, 3 ops per score. The math fallback (float64, some masks) runs as separate
``bmm``/``_softmax`` ops, counted as such (with its scaling multiplies on top). PyTorch's
fused encoder-layer / multi-head-attention fast paths (``_transformer_encoder_layer_fwd``,
``_native_multi_head_attention``) run as one opaque kernel: the engine turns the fast path
off while it counts (``torch.backends.mha.set_fastpath_enabled``), so those layers run as
their constituent linear, attention, norm and pointwise ops and are counted as such.

Interpolation: ``upsample_nearest*`` copies (bytes only); ``upsample_(bi|tri)linear``:
per output element ``2^d`` taps, one multiply-add each (``mac``); ``upsample_bicubic2d``:
16 taps. Their backward ops spread each gradient over the same taps. Anti-aliased resizing
(``_upsample_bilinear2d_aa``, ``_upsample_bicubic2d_aa``) reads as many taps per output
position as its filter's support covers (:func:`_aa_resize_macs`). Group norm and RMS
norm count like layer norm (7 ops per element, backward 14), and so does batch norm, in
eval too: ATen's eval kernel applies one scale and shift per element (2), but the fitted
microcontroller kernel values and the validation summary were fitted with 7; moving to 2
needs a refit on the calibration rows (not done).

MKLDNN tensors (oneDNN's layout: ``x.to_mkldnn()``) are dense: priced by the rules of
strided tensors, every element at its dtype's size (``_MKLDNN``).

Cross-device copies (``_to_copy``/``copy_`` between host and accelerator) are host-device
transfers, not device work: free, so a CUDA run counts what a CPU run counts.

Anything else is *uncounted*: the engine records its name and the report lists it; it is
never silently zero.
"""
from __future__ import annotations

import functools
import math
import weakref
from typing import Any, NamedTuple

import numpy as np
import torch
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils.flop_counter import conv_flop_count, flop_registry

from sim.torch_engine.nested import is_nested_call, nested_cost

aten = torch.ops.aten

_FLOAT_SUFFIX = {torch.float64: "fp64", torch.float32: "fp32", torch.float16: "fp16",
                 torch.bfloat16: "bf16"}

# Composite kernels without an aten tag: ops per element of their first tensor input.
# Softmax = max, subtract, exp, sum, divide (5); log-softmax likewise (5); their backward
# passes = multiply, sum, subtract (3); dropout = compare a random number and scale (2);
# layer norm = mean, subtract, square, mean, rsqrt-scale, affine multiply and add (7),
# backward about twice that (14); NLL loss = one gather-and-add per target element.
_PER_TARGET = {aten.nll_loss_forward: 1, aten.nll_loss_backward: 2}
"""Ops counted per element of their target (the argument at that position), not of their
input: NLL picks one log-probability per target (it counted N x C for N targets)."""
_PER_LARGEST = {aten._adaptive_avg_pool2d_backward}
"""Ops counted per element of their largest tensor, not of their first (a small gradient)."""

_PER_ELEMENT = {
    aten._softmax: 5, aten._log_softmax: 5,
    aten._softmax_backward_data: 3, aten._log_softmax_backward_data: 3,
    aten.native_dropout: 2, aten.native_dropout_backward: 1,
    aten.native_layer_norm: 7, aten.native_layer_norm_backward: 14,
    aten.nll_loss_forward: 1, aten.nll_loss_backward: 1,
    aten._adaptive_avg_pool2d: 1, aten._adaptive_avg_pool2d_backward: 1,
    # batch norm counted like layer norm (same steps over the batch instead of features)
    aten.native_batch_norm: 7, aten.native_batch_norm_backward: 14,
    aten.mse_loss: 3, aten.mse_loss_backward: 3,
    aten.bernoulli_: 1, aten.bernoulli: 1, aten.normal_: 1, aten.uniform_: 1,
    # torch.normal(mean, std) with tensor arguments: normal_'s draw, out of place; the
    # *_like draws (diffusion models' noise) and the other random fills likewise
    aten.normal: 1, aten.randn_like: 1, aten.rand_like: 1, aten.randint_like: 1,
    aten.cauchy_: 1, aten.geometric_: 1, aten.log_normal_: 1,
    # unique_consecutive: one neighbour compare per element (no sort, unlike unique);
    # nonzero_static as nonzero
    aten.unique_consecutive: 1, aten.nonzero_static: 1,
    aten.randn: 1, aten.rand: 1, aten.randint: 1, aten.randperm: 1,
    # running max/min along a dimension: one compare-and-keep per element (a scan)
    aten.cummax: 1, aten.cummin: 1,
    # the in-place form of the pointwise masked_fill (aten tags only the out-of-place one):
    # one select per element (norm backward zeroes the gradient where the norm is 0)
    aten.masked_fill_: 1,
    # ReLU6's backward (MobileNetV2): two bound comparisons per element, keep or zero
    aten.hardtanh_backward: 2,
    # group norm and (fused) RMS norm: the layer norm steps over their groups / features
    aten.native_group_norm: 7, aten.native_group_norm_backward: 14,
    # softmax that leaves fully masked rows at 0 (SDPA's math path): counted as softmax
    aten._safe_softmax: 5,
    aten._fused_rms_norm: 7, aten._fused_rms_norm_backward: 14,
    # activations aten does not tag pointwise, and activation backward passes (per element
    # of their first input, the gradient for a backward): hardswish = add 3, clamp to
    # [0, 6] (2 compares), multiply, divide (5), its backward 2 range compares, (2x + 3) / 6
    # and the gradient product (6); hardsigmoid's, the shrinks' and leaky ReLU's backward =
    # a compare and a select or scale (2); ELU's = compare, add alpha, multiply (3);
    # softplus's = exp, add, divide, multiply, threshold compare (5); Mish's 8 (softplus,
    # tanh, sigmoid and their product rule); log-sigmoid = abs, exp, log1p, max, subtract
    # (5), backward 4; GLU = a sigmoid and a product per output, i.e. 1 per input element,
    # backward 4 per gradient element; PReLU / RReLU = compare, scale, select (2), PReLU's
    # backward with the weight gradient's multiply-add (4)
    aten.hardswish: 5, aten.hardswish_: 5, aten.hardswish_backward: 6,
    aten.hardsigmoid_backward: 2, aten.leaky_relu_backward: 2, aten.elu_backward: 3,
    aten.softplus_backward: 5, aten.mish_backward: 8,
    aten.log_sigmoid_forward: 5, aten.log_sigmoid_backward: 4,
    aten.glu: 1, aten.glu_backward: 4,
    aten.softshrink_backward: 2, aten.hardshrink_backward: 2,
    aten.rrelu_with_noise: 2, aten.rrelu_with_noise_backward: 2,
    aten._prelu_kernel: 2, aten._prelu_kernel_backward: 4,
    # losses: smooth L1 / Huber = subtract, abs, compare, square or shift, scale, sum (6),
    # backward subtract, compare, select, scale (4); BCE = two logs, 1 - y, two products,
    # add, negate, sum (8), backward (p - y) / (p (1 - p)) times the gradient (6); BCE with
    # logits = max(x, 0) - x y + log1p(exp(-|x|)) and the sum (8); 2-D NLL as NLL
    aten.smooth_l1_loss: 6, aten.smooth_l1_loss_backward: 4,
    aten.huber_loss: 6, aten.huber_loss_backward: 4,
    aten.binary_cross_entropy: 8, aten.binary_cross_entropy_backward: 6,
    aten.binary_cross_entropy_with_logits: 8,
    aten.nll_loss2d_forward: 1, aten.nll_loss2d_backward: 1,
    # scans along a dimension: one add / multiply per element; log-cumsum-exp = max,
    # subtract, exp, log-add (4); the exponential RNG draw like the other draws
    aten.cumsum: 1, aten.cumsum_: 1, aten.cumprod: 1, aten.logcumsumexp: 4,
    aten.exponential_: 1,
    # a 3-vector cross product: 6 multiplies and 3 subtractions, 3 per element
    aten.linalg_cross: 3,
    # histogram: bin index (subtract, scale, floor) and the count's add (4); bincount one
    # add per element; nonzero one test per element; allclose |a - b| <= atol + rtol |b|
    # (5); renorm a sum of squares and a scale per element (3)
    aten.histc: 4, aten.bincount: 1, aten.nonzero: 1, aten.allclose: 5, aten.renorm: 3,
    # integer division with floor (aten tags it no pointwise): one op per element
    aten.floor_divide: 1, aten.floor_divide_: 1,
    # fake quantization (quantization-aware training): divide by the scale, round, add the
    # zero point, clamp (2 compares), subtract it, multiply by the scale (7); the learnable
    # form's backward also sums the scale's and zero point's gradients (8); the cachemask
    # backward masks the gradient (1)
    aten.fake_quantize_per_tensor_affine: 7, aten.fake_quantize_per_tensor_affine_cachemask: 7,
    aten._fake_quantize_per_tensor_affine_cachemask_tensor_qparams: 7,
    aten.fake_quantize_per_channel_affine: 7,
    aten.fake_quantize_per_channel_affine_cachemask: 7,
    aten._fake_quantize_learnable_per_tensor_affine: 7,
    aten._fake_quantize_learnable_per_channel_affine: 7,
    aten._fake_quantize_learnable_per_tensor_affine_backward: 8,
    aten._fake_quantize_learnable_per_channel_affine_backward: 8,
    aten.fake_quantize_per_tensor_affine_cachemask_backward: 1,
    aten.fake_quantize_per_channel_affine_cachemask_backward: 1,
    # weight normalisation: the norm (square, add) and the rescale (divide, multiply) per
    # element of v; backward 6
    aten._weight_norm_interface: 4, aten._weight_norm_interface_backward: 6,
    # the default QAT observer-and-fake-quantize kernel: a running min and max (2 compares)
    # and the fake quantization (7)
    aten._fused_moving_avg_obs_fq_helper: 9,
    # the batch norms CUDA and ROCm builds dispatch to, and the functional forms: as
    # native_batch_norm (their first argument is the input)
    aten.cudnn_batch_norm: 7, aten.cudnn_batch_norm_backward: 14,
    aten.miopen_batch_norm: 7, aten.miopen_batch_norm_backward: 14,
    aten._batch_norm_with_update: 7, aten._batch_norm_no_update: 7,
    aten.batch_norm_backward: 14,
    aten._native_batch_norm_legit: 7, aten._native_batch_norm_legit_no_training: 7,
    # softmax with a mask (the transformer fast path's): the mask's select and softmax (6),
    # backward as softmax's (3)
    aten._masked_softmax: 6, aten._masked_softmax_backward: 3,
    # gradient folds: each gradient element added once into its source (col2im: the
    # overlapping patches; padding and nearest upsampling backward: the copies' gradients)
    aten.col2im: 1, aten.reflection_pad1d_backward: 1, aten.reflection_pad2d_backward: 1,
    aten.reflection_pad3d_backward: 1, aten.replication_pad1d_backward: 1,
    aten.replication_pad2d_backward: 1, aten.replication_pad3d_backward: 1,
    aten.upsample_nearest1d_backward: 1, aten.upsample_nearest2d_backward: 1,
    aten.upsample_nearest3d_backward: 1,
    # adaptive max pooling: its windows tile the input, one compare per input element;
    # backward one add per gradient element at its argmax
    aten.adaptive_max_pool2d: 1, aten.adaptive_max_pool2d_backward: 1,
    aten.adaptive_max_pool3d: 1, aten.adaptive_max_pool3d_backward: 1,
    # nearest-exact upsampling's backward and Tensor.unfold's (overlapping windows) fold
    # each gradient element once into its source, as the gradient folds above
    aten._upsample_nearest_exact1d_backward: 1, aten._upsample_nearest_exact2d_backward: 1,
    aten._upsample_nearest_exact3d_backward: 1, aten.unfold_backward: 1,
    # the all / any tests of a boolean tensor (torch.distributions' argument checks): one
    # logical test per element
    aten._is_all_true: 1, aten._is_any_true: 1,
    # dist(a, b, p): subtract, |.|^p, add per element (3); soft margin loss log(1 +
    # exp(-y x)) and its sum (5), backward -y e / (1 + e) times the gradient (6); multi
    # margin loss, per class margin - x[y] + x[i], compare and add (3), backward a compare,
    # a scale and an add (3)
    aten.dist: 3, aten.soft_margin_loss: 5, aten.soft_margin_loss_backward: 6,
    aten.multi_margin_loss: 3, aten.multi_margin_loss_backward: 3,
    # segment reductions (graph pooling): one op per data element
    aten.segment_reduce: 1,
    aten._adaptive_avg_pool3d: 1, aten._adaptive_avg_pool3d_backward: 1,
}
# Attention kernels (see the module docstring): forward ops take (q, k, v, ...); backward
# ops (grad_out, q, k, v, ...).
_SDPA_FORWARD = {aten._scaled_dot_product_flash_attention_for_cpu,
                 aten._scaled_dot_product_flash_attention,
                 aten._scaled_dot_product_efficient_attention,
                 aten._scaled_dot_product_cudnn_attention}
_SDPA_BACKWARD = {aten._scaled_dot_product_flash_attention_for_cpu_backward,
                  aten._scaled_dot_product_flash_attention_backward,
                  aten._scaled_dot_product_efficient_attention_backward,
                  aten._scaled_dot_product_cudnn_attention_backward}
# Interpolation: taps per output element (forward) / per gradient element (backward).
_UPSAMPLE_TAPS = {aten.upsample_linear1d: 2, aten.upsample_bilinear2d: 4,
                  aten.upsample_trilinear3d: 8,
                  aten.upsample_bicubic2d: 16,
                  aten.upsample_linear1d_backward: 2, aten.upsample_bilinear2d_backward: 4,
                  aten.upsample_trilinear3d_backward: 8, aten.upsample_bicubic2d_backward: 16}
# Ops that compare rather than compute: integer/bool inputs count int_cmp.
_COMPARISONS = {aten.eq, aten.ne, aten.lt, aten.le, aten.gt, aten.ge, aten.maximum,
                aten.minimum, aten.max, aten.min, aten.amax, aten.amin, aten.argmax,
                aten.argmin, aten.where, aten.clamp, aten.clamp_min, aten.clamp_max,
                aten.sort, aten.topk, aten._is_all_true, aten._is_any_true,
                # neighbour compares and running max/min (they counted int_add on integers)
                aten.unique_consecutive, aten.cummax, aten.cummin}
_BAGS = {aten._embedding_bag, aten._embedding_bag_forward_only, aten._embedding_bag_backward}
# Scatter/index adds: one add per element of the source (the last tensor argument);
# scatter_reduce likewise, one sum/prod/min/max step per source element.
_SCATTER_ADDS = {aten.scatter_add, aten.scatter_add_, aten.index_add, aten.index_add_,
                 aten.scatter_reduce, aten.scatter_reduce_, aten.index_reduce,
                 aten.index_reduce_}
# Pooling with a window (kernel_size is the argument after the input).
_POOLS = {aten.max_pool2d_with_indices, aten.avg_pool2d, aten.max_pool2d_with_indices_backward,
          aten.avg_pool2d_backward, aten.max_pool3d_with_indices, aten.avg_pool3d,
          aten.max_pool3d_with_indices_backward, aten.avg_pool3d_backward,
          # a quantized tensor's max pooling (torch.ao static models)
          aten.quantized_max_pool1d, aten.quantized_max_pool2d, aten.quantized_max_pool3d,
          # fractional max pooling: a kernel-size window at pseudo-random offsets
          aten.fractional_max_pool2d, aten.fractional_max_pool3d,
          aten.fractional_max_pool2d_backward, aten.fractional_max_pool3d_backward}
_MAX_POOL_BACKWARDS = {aten.max_pool2d_with_indices_backward,
                       aten.max_pool3d_with_indices_backward,
                       aten.fractional_max_pool2d_backward,
                       aten.fractional_max_pool3d_backward}
# Sorting-type ops: n * ceil(log2 n) comparisons along the sorted dimension; mode (ATen
# sorts each slice, then counts its runs) one more compare per element.
# Elementwise overloads ATen does not tag pointwise (their Scalar forms are): other - self
# with a tensor other, a fill with a 0-dim tensor value
_UNTAGGED_POINTWISE = {aten.rsub, aten.masked_fill}
_SORTS = {aten.sort, aten.topk, aten.kthvalue, aten.argsort, aten.median, aten.nanmedian,
          aten.mode}

# Complex arithmetic, in real ops of the component precision per output element (per input
# element for the reductions): the kernel runs the full complex op whatever the other
# operand (ATen promotes a real operand or scalar to complex). add / sub 2; mul (a c - b d,
# a d + b c) 6; div as (a c + b d, b c - a d) / (c^2 + d^2): 6 multiplies, 3 adds, 2
# divides = 11; abs sqrt(a^2 + b^2) 4; angle atan2 1; exp e^a (cos b, sin b) 5; reciprocal
# (c, -d) / (c^2 + d^2) 6; sgn z / |z| (the abs's 4 and 2 divides) 6; conj_physical
# negates the imaginary part 1; polar r (cos t, sin t) 4; sum / mean 2 adds per element;
# the random fills draw 2 reals per element. The scaling that libraries add against
# overflow in div, abs and reciprocal is left out. Other complex ops stay uncounted.
_COMPLEX_OPS = {aten.add: 2, aten.add_: 2, aten.sub: 2, aten.sub_: 2, aten.rsub: 2,
                aten.neg: 2, aten.neg_: 2, aten.mul: 6, aten.mul_: 6, aten.div: 11,
                aten.div_: 11, aten.abs: 4, aten.angle: 1, aten.exp: 5, aten.exp_: 5,
                aten.reciprocal: 6, aten.reciprocal_: 6, aten.sgn: 6, aten.conj_physical: 1,
                aten._conj_physical: 1,
                aten.conj_physical_: 1, aten.polar: 4, aten.sum: 2, aten.mean: 2,
                aten.randn: 2, aten.rand: 2, aten.normal_: 2, aten.uniform_: 2}
_COMPLEX_REDUCTIONS = {aten.sum, aten.mean}

# FFTs (MKL / pocketfft on CPU, cuFFT on CUDA), by FFTW's benchmark convention
# (fftw.org/speed/method.html): 5 N log2 N real ops per complex transform of N points,
# 2.5 N log2 N per real-input or real-output one (N = the product of the transformed
# sizes, of the real signal for r2c / c2r); exact for a radix-2 transform ((N / 2) log2 N
# butterflies of a complex multiply and two complex adds), a convention for other N.
_FFTS = {aten._fft_c2c: 5.0, aten._fft_r2c: 2.5, aten._fft_c2r: 2.5}

# Dense factorisations and solves, by the operation counts of LAPACK Working Note 41 (the
# multiplications, divisions included, and additions of each LAPACK routine that ATen calls:
# POTRF, TRSM, GETRF, GETRS, POTRS, GEQRF, ORGQR), per matrix of a batch (_lapack_ops)
_LAPACK = {aten.linalg_cholesky_ex, aten.linalg_solve_triangular, aten.linalg_lu_factor_ex,
           aten.linalg_lu_solve, aten._linalg_solve_ex, aten.linalg_inv_ex, aten._linalg_det,
           aten._linalg_slogdet, aten.cholesky_solve, aten.linalg_qr, aten.geqrf,
           aten.linalg_householder_product, aten.cholesky, aten.triangular_solve,
           aten.linalg_lu, aten.cholesky_inverse}

# Weight-only quantized matrix products (int8 / int4 weights, float activations: torchao's
# and gpt-fast's LLM inference): the weights are dequantized to the activations' precision
# in the kernel and multiplied there (_weight_only_cost)
_WEIGHT_ONLY = {aten._weight_int8pack_mm, aten._weight_int4pack_mm,
                aten._weight_int4pack_mm_for_cpu}

# Window functions (ATen's hamming_window, which hann_window calls with alpha = beta =
# 0.5): arange(N + periodic) then mul, cos, mul, add in place, 4 ops per computed element
_COSINE_WINDOWS = {aten.hann_window, aten.hamming_window}

FREE = {aten.detach, aten.detach_, aten.alias, aten.lift_fresh, aten.empty, aten.empty_like,
        aten.new_empty, aten.empty_strided, aten.new_empty_strided, aten._unsafe_view,
        aten._local_scalar_dense, aten.set_, aten.resize_, aten.is_same_size,
        aten.sym_size, aten.sym_stride, aten.sym_numel, aten.sym_storage_offset,
        # a sparse tensor's coalesced flag (metadata)
        aten.is_coalesced,
        # reads a status integer the factorisation already returned (host-side check)
        aten._linalg_check_errors,
        # in-place restride (Swin's window partition): metadata only, like a view; so are
        # the in-place transposes and squeezes, and the unsafe splits (views that autograd
        # does not track as views: the RNN cells' gate split)
        aten.as_strided_, aten.transpose_, aten.t_, aten.swapdims_, aten.squeeze_,
        aten.unsqueeze_, aten.unsafe_split, aten.unsafe_chunk, aten.unsafe_split_with_sizes,
        # a nested tensor's metadata: its components' sizes, strides and offsets, its
        # jagged layout's lengths and bounds, the layout query
        aten._nested_tensor_size, aten._nested_tensor_strides,
        aten._nested_tensor_storage_offsets, aten._nested_get_offsets,
        aten._nested_get_lengths, aten._nested_get_ragged_idx, aten._nested_get_min_seqlen,
        aten._nested_get_max_seqlen, aten._nested_get_jagged_dummy, torch.ops.prim.layout,
        aten.dim, aten.sym_is_contiguous, aten.empty_permuted, aten.resize_as_,
        # a zero tensor without storage (sgn's backward makes one): no data, no writes;
        # an asynchronous device assertion (torch._assert_async): a check, no arithmetic
        aten._efficientzerotensor, aten._assert_async}
"""Ops that move no data and compute nothing (views, allocation without writes)."""

MEMORY_ONLY = {aten.copy_, aten.clone, aten._to_copy, aten.cat, aten.stack, aten.index_select,
               aten.gather, aten.scatter, aten.scatter_, aten.index, aten.index_put_,
               aten.index_put, aten.embedding, aten.fill_, aten.eye,
               aten.narrow_copy, aten.slice_copy, aten.select_copy,
               aten.zero_, aten.zeros, aten.zeros_like, aten.ones, aten.ones_like, aten.full,
               aten.full_like, aten.new_zeros, aten.new_ones, aten.new_full, aten.scalar_tensor,
               aten.constant_pad_nd, aten.repeat, aten.contiguous, aten.arange, aten.flip,
               aten.roll, aten.masked_scatter, aten.slice_scatter, aten.select_scatter,
               aten.diagonal_scatter, aten.tril, aten.triu, aten.tril_, aten.triu_,
               aten.one_hot, aten.take, aten.masked_scatter_backward, aten._chunk_cat,
               aten.as_strided_scatter,
               # the copying forms of views (torch.export's functional graphs)
               aten.expand_copy, aten.view_copy, aten.permute_copy, aten.as_strided_copy,
               aten.split_with_sizes_copy, aten.split_copy, aten.unbind_copy,
               aten.unfold_copy, aten.squeeze_copy, aten.unsqueeze_copy, aten.transpose_copy,
               aten.t_copy, aten.alias_copy, aten.detach_copy, aten.diagonal_copy,
               aten.slice_backward, aten.select_backward,
               aten.upsample_nearest1d, aten.upsample_nearest2d, aten.upsample_nearest3d,
               aten._upsample_nearest_exact1d, aten._upsample_nearest_exact2d,
               aten._upsample_nearest_exact3d, aten.pixel_shuffle, aten.pixel_unshuffle,
               aten.reflection_pad1d, aten.reflection_pad2d, aten.reflection_pad3d,
               aten.replication_pad1d, aten.replication_pad2d, aten.replication_pad3d,
               aten.im2col, aten.diagonal_backward, aten.linspace, aten.logspace,
               aten.tril_indices, aten.triu_indices, aten.rot90, aten.block_diag,
               aten.index_fill, aten.index_fill_, aten.index_copy, aten.index_copy_,
               aten.put, aten.put_, aten.channel_shuffle, aten.native_channel_shuffle,
               aten.max_unpool2d, aten.max_unpool3d,
               # pack_padded_sequence: the valid time steps gathered, and its backward's
               # scatter into a zero-padded gradient
               aten._pack_padded_sequence, aten._pack_padded_sequence_backward,
               # a complex tensor interleaved from its real and imaginary parts; a
               # matrix's diagonal copied out (torch.diag)
               aten.complex, aten.diagonal_copy, aten.masked_select,
               # the functional copy and fill of a functionalized graph (torch.export)
               aten.copy, aten.fill,
               # a diagonal matrix from a vector; an LU factorisation unpacked into P, L, U
               aten.diag_embed, aten.lu_unpack,
               # layout conversions to and from oneDNN's MKLDNN layout
               # (torch.jit.optimize_for_inference, x.to_mkldnn())
               aten.to_mkldnn, aten.to_dense, aten._to_dense}
"""Ops that move bytes but do no arithmetic."""

# Gathers: read the selected elements (= the output) plus the index tensors.
_GATHERS = {aten.index, aten.index_select, aten.gather, aten.embedding, aten.narrow_copy,
            aten.slice_copy, aten.select_copy, aten._pack_padded_sequence,
            aten.diagonal_copy}


def source_bytes_gathered(packet, args, outputs) -> int:
    """Bytes an op that :func:`reads_selected_rows_of_first_arg` reads of that source: the
    selected elements (a gather's output, ``pack_padded_sequence``'s packed data) or an
    embedding bag's rows, one per index (its output is their reduction)."""
    if packet in _BAGS:
        weight, indices = args[0], args[1]
        return indices.numel() * math.prod(weight.shape[1:]) * weight.element_size()
    if packet is aten._pack_padded_sequence:
        return _nbytes(outputs[:1])
    return _nbytes(outputs)


def reads_selected_rows_of_first_arg(func) -> bool:
    """True for ops whose first argument is a source they read only selected rows of (the
    gathers and forward embedding bags): the execution model treats such a source as data
    streamed through the block, not as state kept resident (sim/execution/gpu_cpu.py)."""
    packet = getattr(func, "overloadpacket", func)
    return packet in _GATHERS or (packet in _BAGS and packet is not aten._embedding_bag_backward)


# In-place ops that overwrite their written argument without reading it.
_OVERWRITES = {aten.copy_, aten.fill_, aten.zero_, aten.normal_, aten.uniform_,
               aten.bernoulli_, aten.random_, aten.exponential_, aten.geometric_,
               aten.cauchy_, aten.log_normal_, aten.index_put_}
# Factories that take a tensor only for its shape, dtype and device.
_SHAPE_ONLY = {aten.zeros_like, aten.ones_like, aten.empty_like, aten.full_like,
               aten.rand_like, aten.randn_like, aten.randint_like, aten.new_zeros,
               aten.new_ones, aten.new_empty, aten.new_full, aten.new_empty_strided, aten.fill}


def _tensors(tree) -> list[torch.Tensor]:
    """Tensors in aten arguments: flat values, lists/tuples of them, and dicts (kwargs).

    Hand-written rather than ``tree_flatten`` because it runs once per executed op and
    aten schemas nest at most a list inside the argument tuple.
    """
    out: list[torch.Tensor] = []
    stack = [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, torch.Tensor):
            out.append(item)
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed(item))
        elif isinstance(item, dict):
            stack.extend(reversed(list(item.values())))
    return out


def _nbytes(tensors) -> int:
    return sum(t.numel() * t.element_size() if t.layout is _STRIDED else _sparse_bytes(t)
               for t in tensors)


_MKLDNN = torch._mkldnn
"""oneDNN's layout (``x.to_mkldnn()``, ``torch.jit.optimize_for_inference``): a dense tensor
whose storage is opaque (no address, no strides). Counted as dense: its elements at its
dtype's size, by the rules of strided tensors."""

# id(MKLDNN tensor) -> (weak reference to it, its stand-in): see _mkldnn_stand_in
_MKLDNN_STAND_INS: dict[int, tuple] = {}


def _mkldnn_stand_in(t: torch.Tensor) -> torch.Tensor:
    """A strided tensor standing for MKLDNN tensor ``t`` in the memory traces (the resident
    footprint, the arena's and the training step's lifetimes), which key on storages: one
    of ``t``'s elements and dtype (allocated, never written), the same one while ``t``
    lives and dropped with it, so its storage lives as long as ``t`` does."""
    entry = _MKLDNN_STAND_INS.get(id(t))
    if entry is not None and entry[0]() is t:
        return entry[1]
    key = id(t)
    with torch._C._DisableTorchDispatch():   # no observer counts the stand-in's allocation
        stand_in = torch.empty(t.shape, dtype=t.dtype, device=t.device)
    _MKLDNN_STAND_INS[key] = (weakref.ref(t, lambda _, key=key: _MKLDNN_STAND_INS.pop(key, None)),
                              stand_in)
    return stand_in


def _dense_layouts(inputs, outputs) -> bool:
    """Every tensor of a call that is not strided is an MKLDNN one (dense, priced by the
    rules of strided tensors); asked only of calls with a tensor that is not strided."""
    return all(t.layout is _STRIDED or t.layout is _MKLDNN for t in (*inputs, *outputs))


def sparse_parts(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The dense tensors a sparse tensor stores: its values and its indices (COO: one index
    per sparse dimension and value; CSR / CSC / BSR / BSC: the compressed and the plain
    indices)."""
    if t.layout is torch.sparse_coo:
        return t._values(), t._indices()
    row_major = t.layout in (torch.sparse_csr, torch.sparse_bsr)
    return (t.values(), t.crow_indices() if row_major else t.ccol_indices(),
            t.col_indices() if row_major else t.row_indices())


def dense_parts(t: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """``t`` itself, or the dense tensors a sparse one stores (:func:`sparse_parts`): the
    storages a tensor holds, for the footprints and the memory traces; a jagged nested
    tensor's values and offsets; an MKLDNN tensor's strided stand-in
    (:func:`_mkldnn_stand_in`)."""
    if t.layout is _STRIDED:
        return (t,)
    if t.layout is torch.jagged:
        return t.values(), t.offsets()
    if t.layout is _MKLDNN:
        return (_mkldnn_stand_in(t),)
    return sparse_parts(t)


def _sparse_bytes(t: torch.Tensor) -> int:
    if t.layout is _MKLDNN:   # dense: every element at its dtype's size
        return t.numel() * t.element_size()
    return sum(x.numel() * x.element_size() for x in dense_parts(t))


def _distinct_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements a tensor addresses: a dimension of stride 0 (a
    broadcast by ``expand``) repeats the same elements, which a kernel reads once; a sparse
    tensor's stored values and indices."""
    if t.layout is not _STRIDED:
        return _sparse_bytes(t)
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        if stride != 0 or size == 0:
            n *= size
    return n * t.element_size()


@functools.cache
def _written_args(func) -> tuple[tuple[int, str, bool], ...]:
    """(position, name, is_out) of each argument the op's schema marks as written."""
    return tuple((i, a.name, bool(a.is_out)) for i, a in enumerate(func._schema.arguments)
                 if a.alias_info is not None and a.alias_info.is_write)


@functools.cache
def mutated_args(func) -> frozenset[int]:
    """Positions of the arguments the op's schema marks as written."""
    return frozenset(pos for pos, _, _ in _written_args(func))


def _arg(args, kwargs, pos: int, name: str):
    return args[pos] if pos < len(args) else kwargs.get(name)


def _named_args(func, args, kwargs) -> dict:
    """Every argument of one call by its schema name (positional and keyword alike)."""
    return {arg.name: v for arg, v in zip(func._schema.arguments, args, strict=False)} | kwargs


def _index_put_elements(self_: torch.Tensor, indices) -> int:
    """Elements of ``self`` that ``self[indices] = values`` writes."""
    shapes, covered = [], 0
    for ix in indices:
        if ix is None:
            covered += 1
            continue
        if ix.dtype in (torch.bool, torch.uint8):   # a mask: its true entries
            shapes.append((int(ix.count_nonzero()),))
            covered += ix.dim()
        else:
            shapes.append(tuple(ix.shape))
            covered += 1
    n = math.prod(torch.broadcast_shapes(*shapes)) if shapes else 1
    rest = [self_.shape[d] for d, ix in enumerate(indices) if ix is None]
    return n * math.prod(rest) * math.prod(self_.shape[covered:])


def _traffic(func, packet, args, kwargs, inputs, outputs) -> tuple[int, int]:
    """Bytes read and written by one op (the rules are in the module docstring)."""
    if packet is aten.sparse_mask:
        # a dense tensor's values at a sparse mask's indices (the sparse optimizers' state
        # rows): those values and the mask's indices read, the sparse result written
        return (_nbytes(outputs) + _nbytes(sparse_parts(args[1])[1:]), _nbytes(outputs))
    if packet is aten.copy:
        # the functional copy: a new tensor of self's layout holding src (self unread)
        return _distinct_bytes(args[1]), _nbytes(outputs)
    if packet is aten._pack_padded_sequence:
        # the valid steps gathered (the packed data) and the lengths read; the batch
        # sizes computed and written with the data
        return (source_bytes_gathered(packet, args, outputs) + _distinct_bytes(args[1]),
                _nbytes(outputs))
    if packet in _GATHERS or (packet in _BAGS and packet is not aten._embedding_bag_backward):
        # the selected part of the source, and every tensor after it: an index (index's
        # list, index_select's and gather's index, embedding's indices) or a bag's offsets
        # and per-sample weights
        rest = sum(_distinct_bytes(t) for t in _tensors(args[1:]))
        return source_bytes_gathered(packet, args, outputs) + rest, _nbytes(outputs)
    if packet is aten.index_put_:
        self_, indices, values = args[0], args[1], args[2]
        accumulate = bool(_arg(args, kwargs, 3, "accumulate"))
        n = _index_put_elements(self_, indices) * self_.element_size()
        read = _distinct_bytes(values) + sum(_distinct_bytes(t) for t in _tensors(indices))
        return read + (n if accumulate else 0), n
    if packet in _POOLS and "backward" in str(packet):
        # the forward input (args[1]) only gives the gradient's shape
        skip = {id(args[1])}
        return sum(_distinct_bytes(t) for t in inputs if id(t) not in skip), _nbytes(outputs)
    written: list[torch.Tensor] = []
    unread: set[int] = set()
    for pos, name, is_out in _written_args(func):
        ts = _tensors(_arg(args, kwargs, pos, name))
        written.extend(ts)
        if is_out or packet in _OVERWRITES:
            unread.update(id(t) for t in ts)
    if packet in _SHAPE_ONLY:
        unread.update(id(t) for t in inputs)
    read = sum(_distinct_bytes(t) for t in inputs if id(t) not in unread)
    seen = {id(t) for t in written}
    write = _nbytes(written) + _nbytes(t for t in outputs if id(t) not in seen)
    return read, write


# grid_sampler_2d's integer codes (ATen's GridSamplerInterpolation / GridSamplerPadding)
_BILINEAR, _NEAREST = 0, 1
_ZEROS, _BORDER = 0, 1


# Fused recurrent kernels: nn.LSTM on CPU runs ``mkldnn_rnn_layer`` (one layer and
# direction per call); nn.RNN / LSTM / GRU on CUDA run ``_cudnn_rnn`` (every layer and
# direction in one call). ``mode`` is cuDNN's numbering (oneDNN's call reuses it).
_RNN_FORWARD = {aten.mkldnn_rnn_layer, aten._cudnn_rnn}
_RNN_BACKWARD = {aten.mkldnn_rnn_layer_backward, aten._cudnn_rnn_backward}
_RNN_GATES = {0: 1, 1: 1, 2: 4, 3: 3}   # RNN_RELU, RNN_TANH, LSTM, GRU
_CDISTS = {aten._cdist_forward, aten._cdist_backward, aten._pdist_forward,
           aten._pdist_backward, aten._euclidean_dist}
# CUDA's fused cell kernels -> (mode, backward)
_FUSED_CELLS = {aten._thnn_fused_lstm_cell: (2, False),
                aten._thnn_fused_lstm_cell_backward_impl: (2, True),
                aten._thnn_fused_gru_cell: (3, False),
                aten._thnn_fused_gru_cell_backward: (3, True)}
_RNN_POINTWISE = {0: 2, 1: 2, 2: 13, 3: 10}
"""Gate arithmetic per hidden unit and time step, biases apart: an Elman cell adds its two
projections and applies its activation (2); an LSTM cell adds its two projections for 4
gates (4), 3 sigmoids, 2 tanh, c = f c + i g (3), h = o tanh(c) (1): 13; a GRU cell adds
the projections of r and z (2), n = tanh(x_n + r (h_n)) (3), h = n + z (h - n) (3), 2
sigmoids: 10."""


_AA_RESIZES = {aten._upsample_bilinear2d_aa: 2, aten._upsample_bicubic2d_aa: 4,
               aten._upsample_bilinear2d_aa_backward: 2,
               aten._upsample_bicubic2d_aa_backward: 4}
"""Anti-aliased resizing (``F.interpolate(..., antialias=True)``, torchvision's ``Resize``
on tensors) -> its filter's interpolation size (2 bilinear, 4 bicubic)."""


def _aa_taps(in_size: int, out_size: int, align_corners: bool, scale_arg, interp: int,
             dtype: torch.dtype) -> int:
    """The input taps ATen's anti-aliased filter reads for the output positions along one
    dimension, summed: PIL's bounds, as ``_compute_indices_min_size_weights_aa``
    computes them (``center = scale (i + 0.5)``, ``support = interp / 2 x max(scale, 1)``,
    ``xmin = max(int(center - support + 0.5), 0)``, ``xsize = min(int(center + support +
    0.5), in) - xmin``, at most ``2 ceil(support) + 1``), in the kernel's arithmetic (float
    for a float32 tensor, double for float64); ``scale`` as ``area_pixel_compute_scale``."""
    real = np.float64 if dtype == torch.float64 else np.float32
    if align_corners:
        scale = real((in_size - 1) / (out_size - 1)) if out_size > 1 else real(0)
    elif scale_arg is not None and scale_arg > 0:
        scale = real(1.0 / scale_arg)
    else:
        scale = real(in_size) / real(out_size)
    support = real(interp * 0.5 * float(scale)) if scale >= 1 else real(interp * 0.5)
    widest = math.ceil(float(support)) * 2 + 1
    center = (float(scale) * (np.arange(out_size) + 0.5)).astype(real)
    low = np.maximum(np.trunc((center - support).astype(np.float64) + 0.5), 0)
    high = np.minimum(np.trunc((center + support).astype(np.float64) + 0.5), in_size)
    return int(np.clip(high - low, 0, widest).sum())


def _aa_resize_macs(packet, args, first: torch.Tensor) -> int:
    """Multiply-adds of one anti-aliased 2-D resize, as ATen's CPU kernels run it. Forward
    (``input, output_size, align_corners, scales_h, scales_w``): separable, the width first
    (each of the ``N C H_in W_out`` elements takes its column taps), then the height
    (``N C W_out`` columns, each output row its row taps); a dimension whose size does not
    change is skipped. Backward (``grad_output, output_size, input_size, align_corners,
    scales_h, scales_w``): every output gradient spread over its row taps x column taps."""
    backward = "backward" in str(packet)
    interp = _AA_RESIZES[packet]
    if backward:
        out_h, out_w = args[1]
        n, c, in_h, in_w = args[2]
        align, scales = args[3], args[4:6]
    else:
        n, c, in_h, in_w = first.shape
        out_h, out_w = args[1]
        align, scales = args[2], args[3:5]
    scale_h = scales[0] if len(scales) > 0 else None
    scale_w = scales[1] if len(scales) > 1 else None
    rows = _aa_taps(in_h, out_h, align, scale_h, interp, first.dtype)
    cols = _aa_taps(in_w, out_w, align, scale_w, interp, first.dtype)
    if backward:
        return n * c * rows * cols
    macs = n * c * in_h * cols if out_w != in_w else 0
    if out_h != in_h:
        macs += n * c * out_w * rows
    return macs


def _rnn_cost(func, args, kwargs, suffix: str) -> dict[str, int]:
    """One fused recurrent kernel. Every weight matrix multiplies every (time step, batch)
    position once: ``positions x sum(weight matrices' sizes)`` MACs, the same as the cell
    run op by op (``tests/sim/test_torch_engine_coverage.py`` checks the LSTM both ways).
    Pointwise: :data:`_RNN_POINTWISE` per hidden unit and step (the op-by-op LSTM cell
    counts the same 13), plus two bias adds per gate (op by op, one of them rides in an
    ``addmm`` priced as its product alone). Backward: twice the forward's MACs (the inputs'
    and hidden states' gradients, the initial state's included, and the weights'), twice
    its gate arithmetic, and one add per bias gradient element and position."""
    a = _named_args(func, args, kwargs)
    x = a["input"]
    positions = x.numel() // x.shape[-1]          # time steps x batch (or the packed total)
    if func.overloadpacket in (aten.mkldnn_rnn_layer, aten.mkldnn_rnn_layer_backward):
        first = "weight0" if "weight0" in a else "weight1"
        second = "weight1" if first == "weight0" else "weight2"
        matrices, calls = [a[first], a[second]], 1
        biases = a["has_biases"]
    else:
        weights = a["weight"]
        matrices = [w for w in weights if w.dim() == 2]
        biases = any(w.dim() == 1 for w in weights)
        calls = a["num_layers"] * (2 if a["bidirectional"] else 1)
    mode, hidden = a["mode"], a["hidden_size"]
    macs = positions * sum(w.numel() for w in matrices)
    unit_steps = positions * hidden * calls
    bias_adds = 2 * _RNN_GATES[mode] * unit_steps if biases else 0
    pointwise = unit_steps * _RNN_POINTWISE[mode] + bias_adds
    if func.overloadpacket in _RNN_BACKWARD:
        macs, pointwise = 2 * macs, 2 * (pointwise - bias_adds) + bias_adds
    return {f"mac_{suffix}": macs, f"flop_{suffix}": pointwise}


def _cdist_cost(packet, args, suffix: str) -> dict[str, int]:
    """``torch.cdist`` run directly (``_cdist_forward``): each of the B x P x R distances
    takes M subtract-and-accumulate steps (M MACs, M subtractions) and a root; the backward
    (``_cdist_backward``: grad, x1, x2, p, distances) about twice that. ``torch.pdist``
    (``_pdist_forward``: x, p; ``_pdist_backward``: grad, x, p, distances) likewise over
    the N (N - 1) / 2 pairs of x's N rows. ``_euclidean_dist`` (cdist's default for more
    than 25 rows, and ``compute_mode='use_mm_for_euclid_dist'``) as ATen computes it: the
    rows' squared norms (a square and an add per element), x1 times -2, both padded with
    the norms and ones, one product of (P, M + 2) by (M + 2, R), then a clamp and a root
    per distance."""
    if packet is aten._euclidean_dist:
        x1, x2 = args[0], args[1]
        batch = max(x1.shape[:-2].numel(), x2.shape[:-2].numel())
        p, r, m = x1.shape[-2], x2.shape[-2], x1.shape[-1]
        return {f"mac_{suffix}": batch * p * r * (m + 2),
                f"flop_{suffix}": batch * (3 * p * m + 2 * r * m + 2 * p * r)}
    if packet in (aten._pdist_forward, aten._pdist_backward):
        x = args[1] if packet is aten._pdist_backward else args[0]
        pairs, m = x.shape[0] * (x.shape[0] - 1) // 2, x.shape[1]
    else:
        x1, x2 = (args[1], args[2]) if packet is aten._cdist_backward else (args[0], args[1])
        pairs = x1.shape[:-1].numel() * x2.shape[-2]
        m = x1.shape[-1]
    factor = 2 if packet in (aten._cdist_backward, aten._pdist_backward) else 1
    return {f"mac_{suffix}": factor * pairs * m, f"flop_{suffix}": factor * pairs * (m + 1)}


# Fused optimizer kernels (``fused=True``): ops per parameter element, the same as the
# ``_foreach_`` path of the same optimizer counts (tests/sim/test_torch_engine_coverage.py):
# Adam(W) 7 (lerp of the first moment, square and add of the second, square root, bias
# division and epsilon, the update), SGD 1 (the update), Adagrad 5; each option adds its
# own pass: weight decay 1, AMSGrad's running max 1, maximize's negation 1, SGD's momentum
# 2 after its first step (the buffer's scale and add) and Nesterov's look-ahead 1, and an
# AMP gradient scale's unscaling 1.
_FUSED_OPTIMIZERS = {aten._fused_adam_: 7, aten._fused_adamw_: 7, aten._fused_sgd_: 1,
                     aten._fused_adagrad_: 5}


def _fused_optimizer_ops(packet, args, kwargs) -> int:
    params = args[0]
    per = _FUSED_OPTIMIZERS[packet]
    per += (kwargs.get("weight_decay", 0) != 0) + bool(kwargs.get("maximize", False))
    per += kwargs.get("grad_scale") is not None
    if packet is aten._fused_sgd_:
        if kwargs.get("momentum", 0) != 0:
            per += 0 if kwargs.get("is_first_step", False) else 2
            per += bool(kwargs.get("nesterov", False))
    elif packet is not aten._fused_adagrad_:
        per += bool(kwargs.get("amsgrad", False))
    return per * sum(p.numel() for p in params)


# Products torch's FLOP counter has no formula for: matrix-vector (mv, addmv), dot products
# (dot, vdot), the outer-product update addr, addbmm, the int8 matmul _int_mm and the
# mixture-of-experts grouped GEMM _grouped_mm.
_VECTOR_PRODUCTS = {aten.mv, aten.addmv, aten.addmv_, aten.dot, aten.vdot, aten.addr,
                    aten.addr_, aten._int_mm, aten.addbmm, aten.addbmm_, aten._grouped_mm}
# in-place forms of the products torch's FLOP counter has a formula for
_INPLACE_PRODUCTS = {aten.addmm_: aten.addmm, aten.baddbmm_: aten.baddbmm}


def _vector_product_macs(packet, args, out_numel: int = 0) -> int:
    if packet is aten.mv:
        return args[0].numel()                          # each matrix element once
    if packet in (aten.addmv, aten.addmv_):
        return args[1].numel()
    if packet in (aten.addbmm, aten.addbmm_):    # sum over the batch of (n x k) @ (k x m)
        b, n, k = args[1].shape
        return b * n * k * args[2].shape[2]
    if packet in (aten.dot, aten.vdot):
        return args[0].numel()
    if packet in (aten.addr, aten.addr_):
        return args[1].numel() * args[2].numel()        # the outer product, added in
    if packet is aten._grouped_mm:
        # mixture-of-experts GEMM: groups split the rows (2-D x 3-D), the batch (3-D x 3-D)
        # or the columns (3-D x 2-D) and every output element is one K-long dot product;
        # 2-D x 2-D splits K itself, so the groups' products add up to one M x K x N product
        a, b = args[0], args[1]
        if a.dim() == 2 and b.dim() == 2:
            return a.shape[0] * a.shape[1] * b.shape[1]
        return out_numel * a.shape[-1]
    return args[0].shape[0] * args[0].shape[1] * args[1].shape[1]    # _int_mm: n x k x m


# Searches: binary searches (bucketize, searchsorted, isin against a sorted copy of the test
# set) cost ceil(log2(m + 1)) comparisons per query against m sorted values; unique sorts
# (n ceil(log2 n)) and compares neighbours (n); multinomial draws scan each row's weights
# once (a cumulative sum) and binary-search them per sample.
_SEARCHES = {aten.bucketize, aten.searchsorted, aten.isin, aten._unique2, aten._unique,
             aten.multinomial}


def _log2_steps(m: int) -> int:
    return max(1, math.ceil(math.log2(m + 1)))


def _search_compares(packet, args, outputs) -> tuple[int, torch.dtype]:
    """(comparisons, dtype compared) of one search op."""
    if packet is aten.bucketize:                # (input, boundaries)
        x, table = args[0], args[1]
        n = x.numel() if isinstance(x, torch.Tensor) else 1
        return n * _log2_steps(table.numel()), table.dtype
    if packet is aten.searchsorted:             # (sorted_sequence, input)
        table, x = args[0], args[1]
        n = x.numel() if isinstance(x, torch.Tensor) else 1
        rows = table.shape[:-1].numel() if table.dim() > 1 else 1
        return n * _log2_steps(table.numel() // rows), table.dtype
    if packet is aten.isin:                     # (elements, test_elements)
        x, test = args[0], args[1]
        n = x.numel() if isinstance(x, torch.Tensor) else 1
        m = test.numel() if isinstance(test, torch.Tensor) else 1
        return n * _log2_steps(m), (x if isinstance(x, torch.Tensor) else test).dtype
    if packet in (aten._unique2, aten._unique):
        n = args[0].numel()
        return n * _log2_steps(n) + n, args[0].dtype
    probs = args[0]                            # multinomial: (probabilities, samples)
    return probs.numel() + outputs[0].numel() * _log2_steps(probs.shape[-1]), probs.dtype


def _conv_backward_flops(func, args, kwargs, out) -> int:
    """FLOPs of ``aten.convolution_backward``: torch's formula, with its weight-gradient
    term divided by ``groups``. Each weight-gradient element of a grouped convolution sums
    over batch x output positions for the input channels of its own group only, i.e.
    N x H_out x W_out x C_out x (C_in / groups) x kernel multiply-adds, as in the forward;
    torch's term uses all C_in (its docstring leaves groups out "for the sake of
    brevity"). Checked against torch's own total, so a torch that counts groups itself is
    left as it is."""
    flops = int(flop_registry[aten.convolution_backward](*args, **kwargs, out_val=out))
    a = _named_args(func, args, kwargs)
    groups, mask = a["groups"], a["output_mask"]
    if groups == 1 or not mask[1]:
        return flops
    grad_out, x, grad_w = (list(a["grad_output"].shape), list(a["input"].shape),
                           list(out[1].shape))

    def t(shape):   # torch's batch <-> channel swap
        return [shape[1], shape[0], *shape[2:]]
    if a["transposed"]:
        term = conv_flop_count(t(grad_out), t(x), t(grad_w), transposed=False)
    else:
        term = conv_flop_count(t(x), t(grad_out), t(grad_w), transposed=False)
    grad_in = (conv_flop_count(grad_out, list(a["weight"].shape), list(out[0].shape),
                               not a["transposed"]) if mask[0] else 0)
    if flops != grad_in + term:    # not the ungrouped term: torch's formula changed
        return flops
    return grad_in + term // groups


def _affine_grid_cost(args, kwargs, suffix: str, size: int):
    """(counts, read, write) of ``affine_grid_generator(theta, size, align_corners)``: the
    base grid ``[coords..., 1]`` (N x P x (d + 1)) times theta^T (d + 1 x d) in one bmm."""
    theta, shape = args[0], _arg(args, kwargs, 1, "size")
    n, pixels, d = shape[0], math.prod(shape[2:]), len(shape) - 2
    base = n * pixels * (d + 1)                               # base-grid elements
    counts = {f"mac_{suffix}": base * d}                      # (d + 1) MACs per coordinate
    read = _distinct_bytes(theta) + base * size               # bmm reads theta and base grid
    write = base * size + n * pixels * d * size               # base grid, then the grid
    return counts, read, write


def _grid_sample_cost(args, kwargs, suffix: str, size: int, out: torch.Tensor):
    """(counts, read, write) of ``grid_sampler_2d``, or None for a mode without a rule."""
    inp, grid = args[0], args[1]
    mode, padding = _arg(args, kwargs, 2, "interpolation_mode"), _arg(args, kwargs, 3,
                                                                        "padding_mode")
    align = bool(_arg(args, kwargs, 4, "align_corners"))
    if mode not in (_BILINEAR, _NEAREST) or padding not in (_ZEROS, _BORDER):
        return None
    pixels, elements = grid.numel() // 2, out.numel()        # N H W; N C H W
    coord = (3 if align else 4) + (2 if padding == _BORDER else 0)   # unnormalise (+ clip)
    if mode == _BILINEAR:
        # per pixel: 2 coordinates, 2 floors, 4 weights x (2 sub + 1 mul); per element:
        # 4 multiply-adds; indices: 2 adds, 4 corners x 4 bounds comparisons
        counts = {f"flop_{suffix}": pixels * (2 * coord + 2 + 12),
                  f"mac_{suffix}": 4 * elements,
                  "int_add": 2 * pixels, "int_cmp": 16 * pixels}
        taps = 4
    else:
        counts = {f"flop_{suffix}": pixels * (2 * coord + 2), "int_cmp": 4 * pixels}
        taps = 1
    read = taps * elements * inp.element_size() + _distinct_bytes(grid)
    return counts, read, elements * size


def _grid_sample_backward_cost(args, kwargs, suffix: str, size: int, outputs):
    """(counts, read, write) of ``grid_sampler_2d_backward``, or None for a mode without a
    rule. Per output pixel the forward's coordinate work again and, for the grid's gradient,
    2 multiplies by the unnormalisation factor; per output element (N C H W): bilinear, the
    input's gradient spread over the 4 corners (4 multiply-adds) and the grid's, each
    corner's value times its weight's derivative along x and y times the gradient (8
    multiply-adds); nearest, one add into the input's gradient and no grid gradient (zero)."""
    grad_out, inp, grid = args[0], args[1], args[2]
    mode, padding = _arg(args, kwargs, 3, "interpolation_mode"), _arg(args, kwargs, 4,
                                                                        "padding_mode")
    align = bool(_arg(args, kwargs, 5, "align_corners"))
    mask = _arg(args, kwargs, 6, "output_mask")
    want_input, want_grid = bool(mask[0]), bool(mask[1])
    if mode not in (_BILINEAR, _NEAREST) or padding not in (_ZEROS, _BORDER):
        return None
    pixels, elements = grid.numel() // 2, grad_out.numel()
    coord = (3 if align else 4) + (2 if padding == _BORDER else 0)
    if mode == _BILINEAR:
        counts = {f"flop_{suffix}": pixels * (2 * coord + 2 + 12 + 2 * want_grid),
                  f"mac_{suffix}": elements * (4 * want_input + 8 * want_grid),
                  "int_add": 2 * pixels, "int_cmp": 16 * pixels}
        taps = 4
    else:
        counts = {f"flop_{suffix}": pixels * (2 * coord + 2) + elements * want_input,
                  "int_cmp": 4 * pixels}
        taps = 1
    # the gradient and the grid read; the grid's gradient reads the input's corners
    read = (_distinct_bytes(grad_out) + _distinct_bytes(grid)
            + (taps * elements * inp.element_size() if want_grid and mode == _BILINEAR
               else 0))
    return counts, read, _nbytes(outputs)


def _sumproduct_pair(a: list[int], b: list[int], summed: set[int]):
    """(MACs, multiplies, adds, result shape) of ATen's ``sumproduct_pair``: the product
    of two broadcast-aligned operands summed over ``summed`` (kept as size 1). No summed
    dimension: an elementwise product. A summed dimension only one operand has (> 1) is
    summed out of that operand first (one add per its element); the rest is one batched
    product, a MAC per (kept or shared-summed) index combination."""
    if not summed:
        shape = [max(x, y) for x, y in zip(a, b, strict=True)]
        return 0, math.prod(shape), 0, shape
    a, b = list(a), list(b)
    macs, adds = 1, 0
    for i in range(len(a)):
        left, right = a[i] != 1, b[i] != 1
        if i in summed:
            if left and right:
                macs *= a[i]
            elif left:
                adds += math.prod(a)
                a[i] = 1
            elif right:
                adds += math.prod(b)
                b[i] = 1
        elif left or right:
            macs *= max(a[i], b[i])
    shape = [1 if i in summed else max(x, y) for i, (x, y) in enumerate(zip(a, b, strict=True))]
    return macs, 0, adds, shape


def _trilinear_ops(args) -> tuple[int, int]:
    """(MACs, other ops) of ``_trilinear(i1, i2, i3, expand1, expand2, expand3, sumdim,
    unroll_dim=1)`` as ATen runs it: per index k of the unrolled dimension,
    ``sumproduct_pair(i1_k, i2_k)`` over the summed dimensions ``i3`` lacks, then with
    ``i3_k`` over the rest, then added into the output (one add per element). ``F.bilinear``
    (B x I by weight K x I x J by B x J): K (B I J + B J) MACs and K B adds."""
    i1, i2, i3, e1, e2, e3, sumdim = args[:7]
    unroll = args[7] if len(args) > 7 else 1
    total = i1.dim() + len(e1)
    shapes = []
    for t, expand in ((i1, e1), (i2, e2), (i3, e3)):
        shape = list(t.shape)
        for i in range(total):          # ATen unsqueezes dimension i, in order
            if i in expand:
                shape.insert(i, 1)
        shapes.append(shape)
    if any(math.prod(s) == 0 for s in shapes):
        return 0, 0
    # the unrolled dimension's size (0, no slices, when every operand expands it)
    unroll_size = next((s[unroll] for s, e in zip(reversed(shapes), (e3, e2, e1), strict=True)
                        if unroll not in e), 0)
    for s in shapes:
        s[unroll] = 1                   # one slice of the unrolled dimension
    sums = {i for i in sumdim if i != unroll}
    sum12 = {i for i in sums if i in e3}
    macs1, muls1, adds1, buf = _sumproduct_pair(shapes[0], shapes[1], sum12)
    macs2, muls2, adds2, out = _sumproduct_pair(buf, shapes[2], sums - sum12)
    ops = muls1 + adds1 + muls2 + adds2 + math.prod(out)
    return unroll_size * (macs1 + macs2), unroll_size * ops


def _attention_cost(packet, args, suffix: str) -> dict[str, int]:
    """MACs and softmax ops of one fused attention kernel (rule in the module docstring)."""
    backward = packet in _SDPA_BACKWARD
    q, k, v = args[1:4] if backward else args[0:3]
    heads = math.prod(q.shape[:-2])                       # batch x heads
    scores = heads * q.shape[-2] * k.shape[-2]            # Sq x Sk per head
    d, dv = q.shape[-1], v.shape[-1]
    if backward:   # Q K^T again, dQ, dK (D each); dV, dP (Dv each)
        return {f"mac_{suffix}": scores * (3 * d + 2 * dv), f"flop_{suffix}": 3 * scores}
    return {f"mac_{suffix}": scores * (d + dv), f"flop_{suffix}": 5 * scores}   # QK^T + PV


def _cross_device(packet, args, inputs, outputs) -> bool:
    """A copy between host and accelerator (``x.cuda()``, ``copy_`` from a CPU tensor)."""
    if packet not in (aten._to_copy, aten.copy_) or not inputs:
        return False
    dst = args[0].device if packet is aten.copy_ else (outputs[0].device if outputs else None)
    src = args[1].device if packet is aten.copy_ else inputs[0].device
    return dst is not None and src != dst


def float_suffix(dtype: torch.dtype) -> str:
    """The ledger suffix of a floating or complex dtype's real precision (complex64 ->
    fp32), or "" for other dtypes."""
    return _FLOAT_SUFFIX.get(dtype.to_real() if dtype.is_complex else dtype, "")


def _fft_flops(packet, args, outputs) -> int:
    """Real ops of one ``_fft_*`` call (:data:`_FFTS`), plus the normalisation's multiply
    per real output value when it scales (``normalization`` 1: by 1 / sqrt(N), 2: by 1 / N)."""
    x, dims, normalization = args[0], args[1], args[2]
    signal = outputs[0] if packet is aten._fft_c2r else x
    n = math.prod(signal.shape[d] for d in dims)
    flops = round(_FFTS[packet] * n * math.log2(n) * (signal.numel() // n)) if n > 1 else 0
    if normalization:
        out = outputs[0]
        flops += out.numel() * (2 if out.is_complex() else 1)
    return flops


def _potrf(n: int) -> tuple[float, float]:
    return n * ((n / 6 + 0.5) * n + 1 / 3), n * ((n / 6) * n - 1 / 6)


def _trtri(n: int) -> tuple[float, float]:
    return n * (n * (n / 6 + 0.5) + 1 / 3), n * (n * (n / 6 - 0.5) + 1 / 3)


def _getrf(m: int, n: int) -> tuple[float, float]:
    a, b = (m, n) if m < n else (n, m)      # a = min(m, n), b = max(m, n)
    return (0.5 * a * (a * (b - a / 3 - 1) + b) + 2 * a / 3,
            0.5 * a * (a * (b - a / 3) - b) + a / 6)


def _getrs(n: int, nrhs: int) -> tuple[float, float]:
    return nrhs * n * n, nrhs * n * (n - 1)


def _trsm(m: int, nrhs: int, unit: bool) -> tuple[float, float]:
    """A triangular m x m matrix solved against nrhs columns (LAWN 41's TRSM, the unit
    diagonal's m divisions per column left out when it is unit)."""
    return nrhs * m * (m + 1) / 2 - (nrhs * m if unit else 0), nrhs * m * (m - 1) / 2


def _geqrf(m: int, n: int) -> tuple[float, float]:
    if m > n:
        return (n * (n * (0.5 - n / 3 + m) + m + 23 / 6), n * (n * (0.5 - n / 3 + m) + 5 / 6))
    return (m * (m * (-0.5 - m / 3 + n) + 2 * n + 23 / 6), m * (m * (-0.5 - m / 3 + n) + n + 5 / 6))


def _orgqr(m: int, n: int, k: int) -> tuple[float, float]:
    return (k * (2 * m * n + 2 * n - 5 / 3 + k * (2 / 3 * k - (m + n) - 1)),
            k * (2 * m * n + n - m + 1 / 3 + k * (2 / 3 * k - (m + n))))


def _lapack_ops(packet, args, kwargs, outputs) -> tuple[int, int]:
    """(multiply-adds, other ops) of one dense factorisation or solve (:data:`_LAPACK`):
    per matrix LAWN 41's additions, each paired with a multiplication, as MACs, and the
    multiplications left over (divisions included) as other ops, plus what LAWN 41 leaves
    out: Cholesky's n square roots, the determinant's product of the LU diagonal (n) and
    slogdet's |.|, log and sum of it (3 n). ATen runs inv(A) as solve(A, I) (GETRF, then
    GETRS on n columns) and solve(A, B) as GETRF then GETRS."""
    a = args[0]
    if packet is aten.cholesky_solve:            # (B, L, upper): POTRS
        b, a = args[0], args[1]
    batch, (m, n) = math.prod(a.shape[:-2]), a.shape[-2:]
    extra = 0
    if packet in (aten.linalg_cholesky_ex, aten.cholesky):
        muls, adds = _potrf(n)
        extra = n
    elif packet is aten.cholesky_inverse:        # POTRI: TRTRI, then LAUUM (POTRF's counts)
        muls, adds = (x + y for x, y in zip(_trtri(n), _potrf(n), strict=True))
    elif packet is aten.triangular_solve:        # (B, A, upper, transpose, unitriangular)
        b, a = args[0], args[1]
        n, nrhs = a.shape[-1], b.shape[-1]
        muls, adds = _trsm(n, nrhs, bool(_arg(args, kwargs, 4, "unitriangular")))
        batch = max(math.prod(a.shape[:-2]), math.prod(b.shape[:-2]))
    elif packet is aten.linalg_lu:                # GETRF; P, L and U unpacked (bytes)
        muls, adds = _getrf(m, n)
    elif packet is aten.linalg_lu_factor_ex:
        muls, adds = _getrf(m, n)
    elif packet in (aten._linalg_det, aten._linalg_slogdet):
        muls, adds = _getrf(n, n)
        extra = n if packet is aten._linalg_det else 3 * n
    elif packet is aten.linalg_inv_ex:
        muls, adds = (x + y for x, y in zip(_getrf(n, n), _getrs(n, n), strict=True))
    elif packet in (aten._linalg_solve_ex, aten.linalg_lu_solve, aten.linalg_solve_triangular):
        b = args[2] if packet is aten.linalg_lu_solve else args[1]
        left = kwargs.get("left", True) is not False
        # B's columns (solved from the left) or rows (from the right); a vector is one
        nrhs = 1 if b.dim() == 1 else (b.shape[-1] if left else b.shape[-2])
        if packet is aten.linalg_solve_triangular:
            muls, adds = _trsm(n, nrhs, bool(kwargs.get("unitriangular", False)))
        else:
            muls, adds = _getrs(n, nrhs)
            if packet is aten._linalg_solve_ex:
                f = _getrf(n, n)
                muls, adds = muls + f[0], adds + f[1]
        # a batched B against one A (a broadcast) solves B's batch
        batch = max(batch, math.prod(b.shape[:-2]) if b.dim() > 2 else 1)
    elif packet is aten.cholesky_solve:
        nrhs = b.shape[-1]
        muls, adds = nrhs * n * (n + 1), nrhs * n * (n - 1)
        batch = max(batch, math.prod(b.shape[:-2]))
    elif packet is aten.geqrf:                   # the Householder factorisation alone
        muls, adds = _geqrf(m, n)
    elif packet is aten.linalg_householder_product:   # (A, tau): ORGQR, Q's n columns
        muls, adds = _orgqr(m, n, args[1].shape[-1])
    else:                                         # linalg_qr(A, mode)
        mode = _arg(args, kwargs, 1, "mode") or "reduced"
        k = min(m, n)
        muls, adds = _geqrf(m, n)
        if mode != "r":
            q = _orgqr(m, m if mode == "complete" else k, k)
            muls, adds = muls + q[0], adds + q[1]
    muls, adds = round(muls), round(adds)
    return batch * adds, batch * (max(muls - adds, 0) + extra)


# Sparse tensors (COO, CSR, CSC, BSR, BSC: graph adjacency matrices): the products of one
# sparse and one dense matrix, construction, conversion and coalescing have rules
# (_sparse_cost); any other op with a sparse argument or output is uncounted
_SPARSE_PRODUCTS = {aten.mm, aten.addmm, aten._sparse_addmm, aten._sparse_mm}
_SPARSE_MOVES = {aten._sparse_coo_tensor_with_dims_and_tensors,
                 aten._sparse_compressed_tensor_unsafe, aten.sparse_compressed_tensor,
                 aten._to_sparse, aten._to_sparse_csr, aten._to_sparse_csc,
                 aten._to_sparse_bsr, aten._to_sparse_bsc, aten._to_dense, aten.to_dense,
                 aten.clone, aten.copy_, aten._to_copy, aten.sparse_mask}


def _sparse_cost(packet, args, kwargs, inputs, outputs) -> dict[str, int] | None:
    """Counts of an op with a sparse argument or output, or None (uncounted). A product
    of a sparse (m x k, nnz stored values) and a dense matrix: nnz x n MACs (each stored
    value times a row of the dense k x n matrix), or nnz x m for dense (m x k) times sparse
    (k x n); addmm's bias added when beta is not 0 (one op per output element); the
    duplicate-merging sort of ``coalesce`` nnz x ceil(log2 nnz) comparisons and nnz adds;
    construction and conversion between layouts move bytes only; a sparse-sparse product
    has no rule."""
    if packet in _SPARSE_MOVES:
        return {}
    if packet is aten._coalesce:
        t = args[0]
        nnz = t._nnz()
        op = _elementwise_op(packet, t.dtype)
        if not op:
            return None
        return {"int_cmp": nnz * max(1, math.ceil(math.log2(max(nnz, 2)))), op: nnz}
    if packet in (aten.add, aten.add_, aten.sub, aten.sub_):
        # a sparse tensor added into a dense one (SGD's update from an nn.Embedding's
        # sparse gradient): one add per stored value (times alpha, folded in)
        tensors = [a for a in args[:2] if isinstance(a, torch.Tensor)]
        sparse = [t for t in tensors if t.layout is not _STRIDED]
        if len(tensors) != 2 or len(sparse) != 1 or not _FLOAT_SUFFIX.get(sparse[0].dtype):
            return None
        values = sparse_parts(sparse[0])[0]
        return {f"flop_{_FLOAT_SUFFIX[sparse[0].dtype]}": values.numel()}
    if packet not in _SPARSE_PRODUCTS:
        return None
    a, b = (args[0], args[1]) if packet in (aten.mm, aten._sparse_mm) else (args[1], args[2])
    if (a.layout is _STRIDED) == (b.layout is _STRIDED) or a.dim() != 2 or b.dim() != 2:
        return None
    sparse, dense = (a, b) if a.layout is not _STRIDED else (b, a)
    suffix = _FLOAT_SUFFIX.get(dense.dtype)
    if suffix is None:
        return None
    nnz = sparse._nnz() * (math.prod(sparse.values().shape[1:])
                           if sparse.layout in (torch.sparse_bsr, torch.sparse_bsc) else 1)
    macs = nnz * (b.shape[1] if sparse is a else a.shape[0])
    counts = {f"mac_{suffix}": macs}
    beta = kwargs.get("beta", args[3] if len(args) > 3 and packet is not aten._sparse_mm else 1)
    if packet in (aten.addmm, aten._sparse_addmm) and beta != 0:
        counts[f"flop_{suffix}"] = outputs[0].numel()
    return counts


def _weight_only_cost(packet, args, outputs) -> dict[str, int] | None:
    """(self: m x k activations, packed weights, ...) -> m x n: m n k multiply-adds in the
    activations' precision, and the dequantization: int8, one scale multiply per output
    element (the per-channel scale applied after the sum); int4, a scale and a zero point
    per weight element (2 ops x k n), as the group-wise kernel applies them while
    unpacking."""
    x, out = args[0], outputs[0]
    suffix = _FLOAT_SUFFIX.get(x.dtype)
    if suffix is None:
        return None
    m, k, n = x.shape[:-1].numel(), x.shape[-1], out.shape[-1]
    dequant = m * n if packet is aten._weight_int8pack_mm else 2 * k * n
    return {f"mac_{suffix}": m * n * k, f"flop_{suffix}": dequant}


def _elementwise_op(packet, dtype: torch.dtype) -> str:
    if dtype in _FLOAT_SUFFIX:
        return f"flop_{_FLOAT_SUFFIX[dtype]}"
    if dtype.is_complex:
        return ""
    return "int_cmp" if packet in _COMPARISONS else "int_add"


def _accumulated(packet, args, kwargs):
    """The values an accumulating memory op adds into its destination, or None: index_put
    with ``accumulate=True`` (its values), scatter with ``reduce`` "add"/"sum" (its source),
    put with ``accumulate=True`` (its source)."""
    def arg(pos, name, default=None):
        return args[pos] if len(args) > pos else kwargs.get(name, default)
    if packet in (aten.index_put, aten.index_put_) and arg(3, "accumulate", False):
        return arg(2, "values")
    if packet in (aten.scatter, aten.scatter_) and arg(4, "reduce") in ("add", "sum"):
        src = arg(3, "src")
        return src if isinstance(src, torch.Tensor) else None
    if packet in (aten.put, aten.put_) and arg(3, "accumulate", False):
        return arg(2, "source")
    return None


@functools.cache
def is_free(func) -> bool:
    """Every call of ``func`` costs nothing, whatever its arguments: a view, an op in
    :data:`FREE`, or a profiler marker (``record_function`` in the optimizers executes no
    arithmetic)."""
    return func.is_view or func.overloadpacket in FREE or func.namespace == "profiler"


def op_cost(func, args, kwargs, out) -> tuple[dict[str, int], int, int, str]:
    """Cost of one executed aten op.

    Returns
    -------
    counts : dict op name -> count (empty for free ops)
    read_bytes, write_bytes : traffic to device memory (0 for free ops)
    uncounted : the op's name when no formula applies (then counts and bytes are empty), else ""
    """
    if is_free(func):
        return {}, 0, 0, ""
    packet = func.overloadpacket
    inputs, outputs = _tensors((args, kwargs)), _tensors(out)
    name = str(packet).removeprefix("aten.")
    first = inputs[0] if inputs else (outputs[0] if outputs else None)
    counts: dict[str, int] = {}

    if _cross_device(packet, args, inputs, outputs):
        return {}, 0, 0, ""
    if is_nested_call(inputs) or is_nested_call(outputs):
        return nested_cost(func, args, kwargs, out, op_cost)
    if (any(t.layout is not _STRIDED for t in inputs)
            or any(t.layout is not _STRIDED for t in outputs)) \
            and not _dense_layouts(inputs, outputs):
        counts = _sparse_cost(packet, args, kwargs, inputs, outputs)
        if counts is None:
            return {}, 0, 0, name
    elif packet in _SDPA_FORWARD or packet in _SDPA_BACKWARD:
        q = args[1] if packet in _SDPA_BACKWARD else args[0]
        if q.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        counts = _attention_cost(packet, args, _FLOAT_SUFFIX[q.dtype])
    elif packet in _FUSED_OPTIMIZERS:
        params = args[0]
        if not params or params[0].dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        counts[f"flop_{_FLOAT_SUFFIX[params[0].dtype]}"] = _fused_optimizer_ops(packet, args,
                                                                               kwargs)
    elif packet is aten._amp_foreach_non_finite_check_and_unscale_:
        # GradScaler's unscale: each gradient element multiplied by 1 / scale and checked
        # finite (2 ops)
        grads = args[0]
        if not grads or grads[0].dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        counts[f"flop_{_FLOAT_SUFFIX[grads[0].dtype]}"] = 2 * sum(g.numel() for g in grads)
    elif packet is aten._amp_update_scale_:
        # GradScaler's update: on the one-element scale, a check of the inf flag, a
        # growth-tracker increment and a multiply by the growth or backoff factor (3 ops)
        counts[f"flop_{_FLOAT_SUFFIX.get(first.dtype, 'fp32')}"] = 3
    elif packet in _SEARCHES:
        n, dtype = _search_compares(packet, args, outputs)
        counts[_elementwise_op(aten.sort, dtype)] = n
    elif packet in _FUSED_CELLS:
        # CUDA's fused LSTM / GRU cell pointwise kernels (the projections ran before them as
        # addmm): per hidden unit :data:`_RNN_POINTWISE`, plus 2 bias adds per gate when
        # biases are given; backward twice the gate arithmetic plus the bias gradients.
        # The base is the state (cx / hx: batch x hidden) or, backward, its gradient.
        mode, backward = _FUSED_CELLS[packet]
        state = args[2] if not backward else args[0]
        op = _elementwise_op(packet, state.dtype)
        if not op:
            return {}, 0, 0, name
        has_bias = (args[-1] if backward else (len(args) > 3 and args[3] is not None))
        bias = 2 * _RNN_GATES[mode] if has_bias else 0
        per = (2 * _RNN_POINTWISE[mode] + bias) if backward else _RNN_POINTWISE[mode] + bias
        counts[op] = state.numel() * per
    elif packet in (aten.cudnn_grid_sampler, aten.cudnn_grid_sampler_backward):
        # cuDNN's sampler: bilinear, zero padding, corners aligned; its backward (input,
        # grid, grad_output) gives both gradients
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        suffix, size = _FLOAT_SUFFIX[first.dtype], first.element_size()
        if packet is aten.cudnn_grid_sampler:
            cost = _grid_sample_cost((args[0], args[1], _BILINEAR, _ZEROS, True), {},
                                     suffix, size, outputs[0])
        else:
            cost = _grid_sample_backward_cost(
                (args[2], args[0], args[1], _BILINEAR, _ZEROS, True, (True, True)), {},
                suffix, size, outputs)
        counts, read, write = cost
        return {k: v for k, v in counts.items() if v}, read, write, ""
    elif packet in (aten._ctc_loss, aten._ctc_loss_backward, aten._cudnn_ctc_loss):
        # CTC's dynamic programme: per batch element, time step and position of the
        # blank-extended target (2 S + 1), a log-sum-exp of up to 3 predecessors (6 ops);
        # the backward runs the same recursion for beta and adds each log-probability's
        # gradient (3 ops per time step, batch element and class)
        lp = args[1] if packet is aten._ctc_loss_backward else args[0]
        lengths = args[4] if packet is aten._ctc_loss_backward else args[3]
        op = _elementwise_op(packet, lp.dtype)
        if not op:
            return {}, 0, 0, name
        s_max = max(lengths) if isinstance(lengths, (list, tuple)) else int(lengths.max())
        t, b, c = lp.shape if lp.dim() == 3 else (lp.shape[0], 1, lp.shape[1])
        n = t * b * (2 * s_max + 1) * 6
        counts[op] = n + (t * b * c * 3 if packet is aten._ctc_loss_backward else 0)
        if packet is aten._cudnn_ctc_loss:   # cuDNN returns the gradient with the loss
            counts[op] = 2 * n + t * b * c * 3
    elif packet is aten.embedding_renorm_:
        # (weight, indices, max_norm, norm_type): each referenced row's norm (a square and
        # an add per element) and its rescale (a multiply per element)
        weight, indices = args[0], args[1]
        op = _elementwise_op(packet, weight.dtype)
        if not op:
            return {}, 0, 0, name
        counts[op] = 3 * indices.numel() * weight.shape[-1]
    elif packet in _FFTS:
        suffix = float_suffix(first.dtype)
        if not suffix:
            return {}, 0, 0, name
        counts[f"flop_{suffix}"] = _fft_flops(packet, args, outputs)
    elif packet in _WEIGHT_ONLY:
        counts = _weight_only_cost(packet, args, outputs)
        if counts is None:
            return {}, 0, 0, name
    elif packet in _LAPACK:
        if first.dtype not in _FLOAT_SUFFIX:      # complex factorisations: no rule
            return {}, 0, 0, name
        macs, ops = _lapack_ops(packet, args, kwargs, outputs)
        suffix = _FLOAT_SUFFIX[first.dtype]
        counts[f"mac_{suffix}"], counts[f"flop_{suffix}"] = macs, ops
    elif packet in _COSINE_WINDOWS:
        out = outputs[0]
        periodic = _arg(args, kwargs, 1, "periodic")
        computed = out.numel() + (periodic is not False) if out.numel() > 1 else 0
        suffix = float_suffix(out.dtype)
        if not suffix:
            return {}, 0, 0, name
        counts[f"flop_{suffix}"] = 4 * computed
    elif packet in _COMPLEX_OPS and any(t.is_complex() for t in inputs + outputs):
        ref = first if packet in _COMPLEX_REDUCTIONS else (outputs[0] if outputs else first)
        suffix = float_suffix(ref.dtype)
        if not suffix:
            return {}, 0, 0, name
        counts[f"flop_{suffix}"] = ref.numel() * _COMPLEX_OPS[packet]
    elif packet in _VECTOR_PRODUCTS:
        dtype = first.dtype
        macs = _vector_product_macs(packet, args, outputs[0].numel() if outputs else 0)
        if dtype in _FLOAT_SUFFIX:
            counts[f"mac_{_FLOAT_SUFFIX[dtype]}"] = macs
        elif dtype in (torch.int8, torch.uint8):
            counts["mac_int8"] = macs
        elif dtype.is_complex and float_suffix(dtype):
            # a complex multiply-accumulate is 4 real ones (a c - b d, a d + b c)
            counts[f"mac_{float_suffix(dtype)}"] = 4 * macs
        elif not dtype.is_complex:
            counts["int_mul"] = counts["int_add"] = macs
        else:
            return {}, 0, 0, name
    elif packet in _RNN_FORWARD or packet in _RNN_BACKWARD or packet in _CDISTS:
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        counts = (_cdist_cost(packet, args, _FLOAT_SUFFIX[first.dtype]) if packet in _CDISTS
                  else _rnn_cost(func, args, kwargs, _FLOAT_SUFFIX[first.dtype]))
    elif packet in _AA_RESIZES:
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        counts[f"mac_{_FLOAT_SUFFIX[first.dtype]}"] = _aa_resize_macs(packet, args, first)
    elif packet in _UPSAMPLE_TAPS:
        op = _elementwise_op(packet, first.dtype)
        if not op.startswith("flop_"):
            return {}, 0, 0, name
        grad_or_out = first if "backward" in name else outputs[0]
        counts[op.replace("flop_", "mac_")] = grad_or_out.numel() * _UPSAMPLE_TAPS[packet]
    elif packet in flop_registry or packet in _INPLACE_PRODUCTS:
        formula = flop_registry[_INPLACE_PRODUCTS.get(packet, packet)]
        flops = (_conv_backward_flops(func, args, kwargs, out)
                 if packet is aten.convolution_backward
                 else int(formula(*args, **kwargs, out_val=out)))
        macs = flops // 2
        dtype = first.dtype
        if dtype in _FLOAT_SUFFIX:
            counts[f"mac_{_FLOAT_SUFFIX[dtype]}"] = macs
        elif dtype in (torch.int8, torch.uint8):
            counts["mac_int8"] = macs
        elif dtype.is_complex and float_suffix(dtype):
            counts[f"mac_{float_suffix(dtype)}"] = 4 * macs     # 4 real MACs each
        elif not dtype.is_complex:
            counts["int_mul"] = macs
            counts["int_add"] = macs
        else:
            return {}, 0, 0, name
    elif packet in _BAGS:
        # sum-mode embedding bag and its backward: one add per gathered (or scattered)
        # element = number of indices x row width (args: table or grad, indices, ...)
        op = _elementwise_op(packet, first.dtype)
        counts[op] = inputs[1].numel() * first.shape[1]
    elif packet in _SCATTER_ADDS:
        op = _elementwise_op(packet, first.dtype)
        counts[op] = inputs[-1].numel()
    elif packet is aten.embedding_dense_backward:
        # scatter-add of every output gradient row into the table's gradient
        counts[_elementwise_op(packet, first.dtype)] = first.numel()
    elif packet is aten._embedding_bag_per_sample_weights_backward:
        # (grad, weight, indices, ...): each index's weight is the dot product of its bag's
        # gradient row and its table row, one MAC per row element
        grad, weight, indices = args[0], args[1], args[2]
        op = _elementwise_op(packet, grad.dtype)
        if not op.startswith("flop_"):
            return {}, 0, 0, name
        counts[op.replace("flop_", "mac_")] = indices.numel() * weight.shape[1]
    elif packet is aten._trilinear:
        # nn.Bilinear (forward and the three gradients)
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        macs, ops = _trilinear_ops(args)
        suffix = _FLOAT_SUFFIX[first.dtype]
        counts[f"mac_{suffix}"], counts[f"flop_{suffix}"] = macs, ops
    elif packet is aten._segment_reduce_backward:
        # (grad, output, data, ...): each data element's gradient from its segment's, one
        # op each (a copy-and-scale for sum / mean, a compare-and-select for max / min)
        counts[_elementwise_op(packet, first.dtype)] = args[2].numel()
    elif packet is aten.conv_tbc:
        # fairseq's time-batch-channel convolution: ATen runs one GEMM per kernel tap k
        # over the t_k time steps where input and output overlap (padding rows skipped):
        # sum_k t_k x batch x C_in x C_out MACs; the bias is copied in, not added
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        x, w, pad = args[0], args[1], (args[3] if len(args) > 3 else kwargs.get("pad", 0))
        steps, taps = x.shape[0], w.shape[0]
        out_steps = steps + 2 * pad - taps + 1
        rows = sum(max(0, min(steps + pad - k, out_steps) - max(0, pad - k))
                   for k in range(taps))
        counts[f"mac_{_FLOAT_SUFFIX[first.dtype]}"] = rows * x.shape[1] * w.shape[1] * w.shape[2]
    elif packet is aten.trace:
        # the diagonal's sum: one add per diagonal element
        counts[_elementwise_op(packet, first.dtype)] = min(first.shape)
    elif packet in _POOLS:
        kernel = args[2] if "backward" in name else args[1]
        dims = 3 if "3d" in name else 1 if "1d" in name else 2
        window = math.prod(kernel) if len(kernel) > 1 else kernel[0] ** dims   # [k] = k x k
        if "backward" not in name:
            n = outputs[0].numel() * window          # compare / add each window element
        elif packet in _MAX_POOL_BACKWARDS:
            n = first.numel()                        # add each gradient at its argmax
        else:
            n = first.numel() * window               # spread each gradient over its window
        counts[_elementwise_op(packet, first.dtype)] = n
    elif packet in (aten.affine_grid_generator, aten.grid_sampler_2d,
                    aten.grid_sampler_2d_backward):
        if first.dtype not in _FLOAT_SUFFIX:
            return {}, 0, 0, name
        suffix, size = _FLOAT_SUFFIX[first.dtype], first.element_size()
        if packet is aten.affine_grid_generator:
            cost = _affine_grid_cost(args, kwargs, suffix, size)
        elif packet is aten.grid_sampler_2d:
            cost = _grid_sample_cost(args, kwargs, suffix, size, outputs[0])
        else:
            cost = _grid_sample_backward_cost(args, kwargs, suffix, size, outputs)
        if cost is None:
            return {}, 0, 0, name
        counts, read, write = cost
        return {k: v for k, v in counts.items() if v}, read, write, ""
    elif packet in MEMORY_ONLY:
        # an accumulating write adds each value into its destination (an embedding's
        # backward: index_put with accumulate): one add per value written
        added = _accumulated(packet, args, kwargs)
        if added is not None:
            op = _elementwise_op(aten.add, added.dtype)
            if not op:
                return {}, 0, 0, name
            counts[op] = added.numel()
    elif packet in _SORTS:
        if first is None:
            return {}, 0, 0, name
        dim_pos = 2 if packet in (aten.topk, aten.kthvalue) else 1  # after k for topk
        dim = args[dim_pos] if len(args) > dim_pos and isinstance(args[dim_pos], int) \
            else kwargs.get("dim", -1)
        whole = packet in (aten.median, aten.nanmedian) and len(args) < 2 and "dim" not in kwargs
        n = first.numel() if whole else (first.shape[dim] if first.dim() else 1)
        op = _elementwise_op(aten.sort, first.dtype)
        counts[op] = first.numel() * (max(1, math.ceil(math.log2(max(n, 2))))
                                      + (packet is aten.mode))
    elif name.startswith("_foreach_"):
        # list ops of the optimizers: one op per element of the first tensor list
        lists = [a for a in args if isinstance(a, (list, tuple)) and a
                 and isinstance(a[0], torch.Tensor)]
        if not lists:
            return {}, 0, 0, name
        for t in lists[0]:
            op = _elementwise_op(packet, t.dtype)
            counts[op] = counts.get(op, 0) + t.numel()
    elif name in _QUANTIZED_LINEARS:
        return _quantized_linear_cost(name, args, inputs, outputs)
    elif name in _QUANTIZED_CONVS:
        return _quantized_conv_cost(name, args, inputs, outputs)
    elif name in _QUANTIZED_EMBEDDINGS:
        return _quantized_embedding_cost(name, args, outputs)
    elif name in _QUANTIZED_BAGS:
        return _quantized_bag_cost(func, name, args, kwargs, outputs)
    elif packet in _QUANTIZED_RNNS:
        return _quantized_rnn_cost(func, args, kwargs, inputs, outputs)
    elif name in _QUANTIZED_PER_ELEMENT:
        # a quantized tensor's elementwise kernel: integer ops per output element (per
        # input element for the norms, which read their statistics), a fused ReLU one more
        ref = outputs[0] if outputs else first
        counts["int_add"] = ref.numel() * (_QUANTIZED_PER_ELEMENT[name] + ("relu" in name))
    elif name == "quantized.matmul":
        # int8 batched matrix product: (..., n, k) by (..., k, m), k products per output
        counts["mac_int8"] = outputs[0].numel() * first.shape[-1]
    elif packet in (aten.quantize_per_tensor, aten.quantize_per_channel):
        # a static quantized model's entry: per element a multiply by 1 / scale and the
        # round, zero-point add and clamp taken as one more op
        counts["flop_fp32"] = 2 * first.numel()
    elif packet is aten.dequantize and first is not None and first.is_quantized:
        # its exit: per element the zero point subtracted and the scale multiplied
        counts["int_add"] = counts["flop_fp32"] = first.numel()
    elif torch.Tag.pointwise in func.tags or packet in _UNTAGGED_POINTWISE:
        ref = outputs[0] if outputs else first
        op = _elementwise_op(packet, first.dtype if first is not None else ref.dtype)
        if not op:
            return {}, 0, 0, name
        counts[op] = ref.numel()
    elif torch.Tag.reduction in func.tags or packet in _PER_ELEMENT:
        if first is None:
            ref = outputs[0]
        elif first.dim() == 0 or packet in _PER_LARGEST:
            # a loss's backward under mean or sum reduction takes its 0-dim gradient first
            # (mse_loss_backward counted 3 flops for any output); an adaptive pooling's
            # backward spreads each gradient over the input: per element of the largest
            ref = max((*inputs, *outputs), key=lambda t: t.numel())
        else:
            ref = first
        n = ref.numel()
        if packet in _PER_TARGET:    # one gather-and-add per target element
            n = args[_PER_TARGET[packet]].numel()
            ref = next(t for t in inputs if t.is_floating_point() or t.is_complex())
        op = _elementwise_op(packet, ref.dtype)
        if not op:
            return {}, 0, 0, name
        counts[op] = n * _PER_ELEMENT.get(packet, 1)
    else:
        return {}, 0, 0, name
    if "" in counts:    # a rule met a dtype it has no op for (a complex scatter-add ...)
        return {}, 0, 0, name
    read, write = _traffic(func, packet, args, kwargs, inputs, outputs)
    return {k: v for k, v in counts.items() if v}, read, write, ""


_QUANTIZED_LINEARS = {"quantized.linear_dynamic", "quantized.linear_relu_dynamic",
                      "quantized.linear_dynamic_fp16", "quantized.linear_relu_dynamic_fp16",
                      "quantized.linear", "quantized.linear_relu"}
"""torch.ao's quantized Linear kernels (``quantize_dynamic``'s and a converted static model's):
the weight arrives packed (a ``LinearPackedParamsBase``, no tensor), so the generic rules
see neither its work nor its bytes."""


def _quantized_linear_cost(name, args, inputs, outputs) -> tuple[dict[str, int], int, int, str]:
    """One quantized Linear: the GEMM of the input's rows by the packed weight (out x in) in
    int8 (``_fp16``: fp16 weights); a dynamic int8 one first quantizes its float input (a
    min and a max over it, then a scale per element: 3 ops an element) and dequantizes its
    float output (a scale and the bias: 2 ops an element); the fp16 one adds the bias to
    each float output (1); a ``_relu`` one adds a max per output element. Requantizing a
    static one's int32 sums to its output scale is not counted (nor for the convolutions).
    Bytes: the input, the weight's values as stored (int8, or fp16: fbgemm unpacks it as
    fp32) and the bias, the output."""
    x, y = inputs[0], outputs[0]
    weight, *rest = packed_weights(args[1])
    bias = next((p for p in rest if p.bias), None)
    n, k = weight.shape
    rows = x.numel() // max(k, 1)
    counts = {"mac_fp16" if name.endswith("_fp16") else "mac_int8": rows * k * n}
    if name.endswith("_fp16"):
        # fbgemm's fp16 GEMM takes the float input as it is (the weights widen in the
        # kernel): no quantization, the bias added to each output
        if bias is not None:
            counts["flop_fp32"] = y.numel()
    elif "dynamic" in name:
        counts["flop_fp32"] = 3 * x.numel() + 2 * y.numel()
    if "relu" in name:
        op = "flop_fp32" if y.is_floating_point() else "int_add"
        counts[op] = counts.get(op, 0) + y.numel()
    read = _nbytes([x]) + weight.value_bytes + (bias.value_bytes if bias is not None else 0)
    return counts, read, _nbytes([y]), ""


_QUANTIZED_CONVS = {f"quantized.{kind}" for kind in (
    "conv1d", "conv2d", "conv3d", "conv1d_relu", "conv2d_relu", "conv3d_relu",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv2d_add",
    "conv2d_add_relu")}
"""torch.ao's quantized convolution kernels (a converted static model's ``nnq.Conv*d``,
``nniq.ConvReLU*d``, ``nnq.ConvTranspose*d``; oneDNN's fused ``conv2d_add``): their weight
arrives packed, like the Linears'."""


def _quantized_conv_cost(name, args, inputs, outputs) -> tuple[dict[str, int], int, int, str]:
    """One quantized convolution: int8 products, torch's FLOP-counter rule (every output
    element, padded positions included, meets ``in_channels / groups x kernel`` weights; a
    transposed one: every input element meets ``out_channels / groups x kernel``). The
    packed weight is unpacked for its shape (``out, in / groups, kernel...``; transposed
    ``in, out / groups, kernel...``: the second dimension and the kernel either way). A
    ``_add`` one adds the accumulated tensor to each output (1 op), a ``_relu`` one a max
    (1 op). Bytes: the input (and accumulated tensor), the int8 weight and the bias, the
    output."""
    x, y = inputs[0], outputs[0]
    weight, *rest = packed_weights(args[2] if "_add" in name else args[1])
    bias = next((p for p in rest if p.bias), None)
    taps = math.prod(weight.shape[1:])
    counts = {"mac_int8": (x if "transpose" in name else y).numel() * taps}
    extra = ("_add" in name) + ("relu" in name)
    if extra:
        counts["int_add"] = extra * y.numel()
    read = (_nbytes(inputs) + weight.value_bytes
            + (bias.value_bytes if bias is not None else 0))
    return counts, read, _nbytes([y]), ""


_QUANTIZED_EMBEDDINGS = {"quantized.embedding_byte", "quantized.embedding_4bit"}
"""A quantized ``nn.Embedding`` (torch.ao's weight-only ``QuantizedEmbedding``): rows of 8 or
4 bits with a float scale and offset per row, packed."""


def _quantized_embedding_cost(name, args, outputs) -> tuple[dict[str, int], int, int, str]:
    """One quantized embedding lookup: per index its row gathered and dequantized (a scale
    and an offset per element: 2 fp32 ops). Bytes: the indices, per index its row as stored
    (``dim`` bytes, or ``dim / 2`` for 4 bits, and the row's scale and offset: two fp32
    for 8-bit rows, two fp16 for 4-bit ones, as fbgemm lays them out), the float output."""
    indices, y = args[1], outputs[0]
    dim = packed_weights(args[0])[0].shape[-1]
    read = _nbytes([indices]) + indices.numel() * _row_bytes(dim, 8 if name.endswith("_byte")
                                                             else 4)
    return {"flop_fp32": 2 * y.numel()}, read, _nbytes([y]), ""


def _row_bytes(dim: int, bits: int) -> int:
    """Bytes of one quantized embedding row as fbgemm stores it: ``dim`` values at ``bits``,
    then the row's scale and offset (two fp32 for 8-bit rows, two fp16 below)."""
    return (dim * bits + 7) // 8 + (8 if bits == 8 else 4)


_QUANTIZED_BAGS = {"quantized.embedding_bag_byte": 8, "quantized.embedding_bag_4bit": 4,
                   "quantized.embedding_bag_byte_rowwise_offsets": 8,
                   "quantized.embedding_bag_4bit_rowwise_offsets": 4,
                   "quantized.embedding_bag_2bit_rowwise_offsets": 2}
"""A quantized ``nn.EmbeddingBag`` (torch.ao's ``QuantizedEmbeddingBag``, packed) and fbgemm's
row-wise kernels on prepacked rows (a uint8 tensor, each row its values and then its scale
and offset) -> the bits a value is stored in."""


def _quantized_bag_cost(func, name, args, kwargs, outputs):
    """One quantized embedding bag: each index's row dequantized (a scale and an offset per
    element) and accumulated into its bag (an add, or a compare for ``max``), a per-sample
    weight's multiply when given: 3 or 4 fp32 ops per element of every looked-up row; a
    ``mean`` bag divides each output element once. Bytes: per index its row as stored (the
    values at their bits and the row's scale and offset: two fp32 for 8-bit rows, two fp16
    below), the indices, offsets and per-sample weights, the output."""
    a = _named_args(func, args, kwargs)
    bits = _QUANTIZED_BAGS[name]
    weight = a["weight"]
    if isinstance(weight, torch.Tensor):   # prepacked rows: values, then scale and offset
        dim = (weight.shape[1] - _row_bytes(0, bits)) * 8 // bits
    else:
        dim = packed_weights(weight)[0].shape[1]
    indices = a["indices"]
    per_sample = a.get("per_sample_weights")
    lookups = indices.numel() * dim
    counts = {"flop_fp32": lookups * (3 + (per_sample is not None))}
    if a.get("mode", 0) == 1:
        counts["flop_fp32"] += outputs[0].numel()
    row = _row_bytes(dim, bits)
    small = [t for t in (indices, a.get("offsets"), per_sample,
                         a.get("compressed_indices_mapping")) if isinstance(t, torch.Tensor)]
    return counts, indices.numel() * row + _nbytes(small), _nbytes(outputs), ""


_QUANTIZED_RNNS = {aten.quantized_lstm, aten.quantized_gru}
"""``quantize_dynamic``'s nn.LSTM and nn.GRU: one kernel for every layer and direction, the
weights packed per cell (int8, or fp16)."""


def _quantized_rnn_cost(func, args, kwargs, inputs, outputs):
    """One dynamic quantized LSTM or GRU: per position (time step x batch), layer and
    direction, the cell's two GEMMs (input and hidden state by the gate weights,
    ``G H (I_l + H)`` products, ``I_l`` the layer's input width) in the weights' type, and
    the gate arithmetic of :func:`_rnn_cost` (:data:`_RNN_POINTWISE` per hidden unit). An
    int8 cell quantizes each GEMM's float input (3 ops an element) and dequantizes its
    outputs with the bias (2 ops an element, as :func:`_quantized_linear_cost`); an fp16
    one adds the two biases (2 per gate output). Bytes: the generic reads and writes of the
    tensors, plus every weight as stored and the fp32 biases."""
    a = _named_args(func, args, kwargs)
    x = a["input"] if "input" in a else a["data"]
    hx = a["hx"]
    h0 = hx[0] if isinstance(hx, (list, tuple)) else hx
    lstm = func.overloadpacket is aten.quantized_lstm
    gates, pointwise_per_unit = (4, _RNN_POINTWISE[2]) if lstm else (3, _RNN_POINTWISE[3])
    layers, directions = a["num_layers"], 2 if a["bidirectional"] else 1
    hidden, width = h0.shape[-1], x.shape[-1]
    positions = x.numel() // width
    fp16 = _cell_params_fp16(a["params"], a.get("dtype"))
    products = pointwise = weight_elements = 0
    for layer in range(layers):
        layer_in = width if layer == 0 else directions * hidden
        cell = gates * hidden * (layer_in + hidden)
        weight_elements += cell
        products += cell
        pointwise += hidden * pointwise_per_unit
        if fp16:
            pointwise += 2 * gates * hidden if a["has_biases"] else 0
        else:
            pointwise += 3 * (layer_in + hidden) + 2 * 2 * gates * hidden
    products *= positions * directions
    pointwise *= positions * directions
    weight_bytes = directions * weight_elements * (2 if fp16 else 1)
    if a["has_biases"]:
        weight_bytes += directions * layers * 2 * gates * hidden * 4
    read, write = _traffic(func, func.overloadpacket, args, kwargs, inputs, outputs)
    counts = {"mac_fp16" if fp16 else "mac_int8": products, "flop_fp32": pointwise}
    return counts, read + weight_bytes, write, ""


def _cell_params_fp16(params, dtype) -> bool:
    """The packed cells of a quantized RNN hold fp16 weights (``quantize_dynamic`` with
    ``dtype=torch.float16``), not int8: their state names the kind."""
    if dtype is not None:
        return dtype == torch.float16
    if not params or not isinstance(params[0], torch.ScriptObject):
        return False   # the legacy overloads' tensors: int8
    try:
        return params[0].__getstate__()[0][0] == "quantized_fp16"
    except (AttributeError, IndexError, RuntimeError, TypeError):
        return False


_SUB_BYTE_BITS = {torch.quint4x2: 4, torch.quint2x4: 2}


def is_packed_weights(obj) -> bool:
    """``obj`` is a script object of a kind :func:`packed_weights` reads."""
    try:
        kind = obj._type().qualified_name()
    except (AttributeError, RuntimeError):
        return False
    return kind.endswith((".CellParamsBase", "PackedParamsBase"))


class PackedTensor(NamedTuple):
    """One tensor a torch.ao packed-weight object holds: its shape and elements, its values'
    bytes as stored (``value_bytes``: int8 1 B, an fp16 Linear's 2 B, an embedding row's
    values at its bit rate) and with its scales and zero points (``stored``), whether it is
    a bias, and how many of its values are 0 (dequantized: the integer is the zero point)."""

    shape: tuple
    numel: int
    value_bytes: int
    stored: int
    bias: bool
    zeros: int


_PACKED: dict[int, tuple] = {}
"""id(packed object) -> (weak reference to it, its :class:`PackedTensor` tuple)."""


def packed_weights(obj) -> tuple[PackedTensor, ...]:
    """The tensors a torch.ao packed-weight object holds (a quantized Linear's, convolution's
    or embedding's ``*PackedParamsBase``, a dynamic RNN's ``CellParamsBase``), () for
    another script object. They are no parameters or buffers of their module: a converted
    model's ``parameters()`` are empty. Stored bytes: a quantized tensor's integers (1 B;
    an embedding's rows at its bit rate, 8, 4 or 2 bits) with a scale and a zero point per
    tensor or per channel (8 B; an embedding row of 4 or 2 bits 4 B, two fp16, as fbgemm
    lays them out); a packed Linear that unpacks to float holds fp16 weights (fbgemm's only
    float packing; 2 B); biases fp32.

    Kept per live object: unpacking copies the weights (3.5 ms for a 768 x 768 int8
    Linear, on every call it was priced), and a packed object never changes (torch packs
    a new one to change the weights)."""
    known = _PACKED.get(id(obj))
    if known is not None and known[0]() is obj:
        return known[1]
    with _disable_current_modes():   # unpacking and counting zeros run ops: not the model's
        summary = tuple(_unpacked(obj))
    key = id(obj)
    try:   # the entry goes with the object
        ref = weakref.ref(obj, lambda _: _PACKED.pop(key, None))
    except TypeError:   # no weak reference: not kept
        return summary
    _PACKED[key] = (ref, summary)
    return summary


def _unpacked(obj) -> list[PackedTensor]:
    """:func:`packed_weights` of ``obj``, unpacked now."""
    try:
        kind = obj._type().qualified_name()
    except (AttributeError, RuntimeError):
        return []
    if kind.endswith(".CellParamsBase"):
        # (kind, the biases of an int8 cell, ..., the cell's two packed Linears, which
        # hold the biases too: counted once)
        state = obj.__getstate__()[0]
        out = [w for linear in state[4] for w in packed_weights(linear)]
        if not any(p.bias for p in out):
            out += [_plain(t, True) for t in state[1] if isinstance(t, torch.Tensor)]
        return out
    if not kind.endswith("PackedParamsBase"):
        return []
    unpacked = obj.unpack()
    tensors = unpacked if isinstance(unpacked, tuple) else (unpacked,)
    # an embedding's rows may be packed at 4 or 2 bits (unpacked to quint8)
    bits = obj.bit_rate() if kind.endswith("EmbeddingPackedParamsBase") else None
    out = []
    for i, t in enumerate(tensors):
        if not isinstance(t, torch.Tensor):
            continue
        if t.is_quantized:
            channels = (t.q_per_channel_scales().numel()
                        if t.qscheme() in _PER_CHANNEL else 1)
            values = (t.numel() * (bits or _SUB_BYTE_BITS.get(t.dtype, 8)) + 7) // 8
            # a scale and a zero point per tensor or channel; an embedding's per row, as
            # fbgemm lays its rows out
            qparams = _row_bytes(0, bits) if bits is not None else 8
            out.append(PackedTensor(tuple(t.shape), t.numel(), values,
                                    values + qparams * channels, i > 0,
                                    t.numel() - int(torch.count_nonzero(t.dequantize()))))
        elif i == 0 and kind.endswith("LinearPackedParamsBase"):
            p = _plain(t, False)
            out.append(p._replace(value_bytes=2 * t.numel(), stored=2 * t.numel()))
        else:
            out.append(_plain(t, i > 0))
    return out


def _plain(t: torch.Tensor, bias: bool) -> PackedTensor:
    """A float tensor of a packed object, stored as it is."""
    nbytes = t.numel() * t.element_size()
    return PackedTensor(tuple(t.shape), t.numel(), nbytes, nbytes, bias,
                        t.numel() - int(torch.count_nonzero(t)))


_PER_CHANNEL = (torch.per_channel_affine, torch.per_channel_symmetric,
                torch.per_channel_affine_float_qparams)


_QUANTIZED_PER_ELEMENT = {
    **{f"quantized.{op}{suffix}": 1 for op in ("add", "mul", "add_scalar", "mul_scalar")
       for suffix in ("", "_relu", "_out", "_relu_out")},
    # the activations as aten counts their float forms (hardswish 5, the others one op an
    # element); softmax and the norms as theirs (5 and 7: their statistics are computed)
    "quantized.hardswish": 5, "quantized.leaky_relu": 1, "quantized.relu6": 1,
    "quantized.elu": 1, "quantized.celu": 1, "quantized.threshold": 1,
    "quantized.sigmoid": 1, "quantized.softmax": 5, "quantized.layer_norm": 7,
    "quantized.group_norm": 7, "quantized.instance_norm": 7,
    # batch norm in inference, as the quantized kernel runs it: the running statistics,
    # weight and bias folded into a scale and a shift per channel, 2 ops an element
    **{f"quantized.batch_norm{d}{relu}": 2 for d in ("", "1d", "2d", "3d")
       for relu in ("", "_relu")},
    # concatenation moves bytes only
    "quantized.cat": 0, "quantized.cat_relu": 0, "quantized.cat_out": 0,
}
"""torch.ao's quantized elementwise kernels (``FloatFunctional``'s add and mul, the quantized
activations and norms): integer ops per output element (``int_add``, as integer tensors'
pointwise ops count), a ``_relu`` form one more. Requantizing to the output's scale is not
counted, as for the Linears."""


def tensor_bytes(tensors: Any) -> int:
    """Bytes held by every tensor in a (nested) structure."""
    return _nbytes(_tensors(tensors))


# -- the cost of a call seen before ----------------------------------------------------------

VALUE_DEPENDENT = {aten.index_put_, aten._ctc_loss, aten._ctc_loss_backward,
                   aten._cudnn_ctc_loss, *_FUSED_OPTIMIZERS}
"""Ops whose cost reads values that :func:`op_signature` does not key on: tensor values
(``index_put_`` with a boolean mask writes its true entries; CTC's target lengths given as
a tensor) or a Python float (a fused optimizer's weight decay and momentum, zero or not,
decide its passes; two parameter groups of the same shapes may differ in them). Priced in
full on every call, never from :class:`CostMemo`, never replayed."""

_SIGNATURE_MISS = object()
_FREE_COST: tuple[dict[str, int], int, int, str] = ({}, 0, 0, "")
# argument values kept in a key as they are: immutable, hashable, compared by value
_KEYED_VALUES = (int, str, complex, torch.dtype, torch.device, torch.layout,
                 torch.memory_format)


def op_signature(func, args, kwargs, out) -> tuple | None:
    """Everything :func:`op_cost` reads of one call, as a hashable key; ``None`` when its
    cost may depend on more (a value-dependent op, a tensor without strides).

    :func:`op_cost` reads the op (``func``: its overload, schema and tags), of every tensor
    argument and output its shape, strides, dtype and device, which arguments are the same
    tensor object (``_traffic`` tells an in-place op's written ``self`` from its returned
    alias by identity), and the non-tensor arguments (kernel sizes, dims, mode codes). It
    never reads a Python float's value (a learning rate, Adam's bias corrections change
    every step), so a float stands in the key as its type; ints, strings, dtypes, devices,
    layouts and memory formats are kept as they are; a call with any other object (the
    optimizers' profiler handles) has no key.
    """
    if func in VALUE_DEPENDENT or func.overloadpacket in VALUE_DEPENDENT:
        return None
    key: list = [func, len(args)]
    seen: dict[int, int] = {}
    try:
        sign_into(args, key, seen)
        if kwargs:
            key.append(("{", tuple(kwargs)))
            sign_into(kwargs.values(), key, seen)
        sign_into((out,), key, seen)
    except NoSignature:
        return None
    except RuntimeError:   # a strided nested tensor: no sizes or strides to key on
        return None
    return tuple(key)


class NoSignature(Exception):
    """A call argument that :func:`op_signature` cannot key on."""


_Tensor, _STRIDED = torch.Tensor, torch.strided


def sign_into(items, key: list, seen: dict[int, int]) -> None:
    """Append the key of each of ``items`` to ``key`` (see :func:`op_signature`); recursion
    into lists rather than a work stack: runs once per executed op (issue 36), and aten
    schemas nest at most a list of tensors in an argument."""
    append = key.append
    for item in items:
        if isinstance(item, _Tensor):
            first = seen.get(id(item))
            if first is not None:
                append(("same", first))
                continue
            seen[id(item)] = len(seen)
            if item.layout is not _STRIDED:
                raise NoSignature   # sparse and other layouts: no strides to key on
            append((item.shape, item.stride(), item.dtype, item.device))
        elif isinstance(item, float):
            append(float)
        elif isinstance(item, (list, tuple)):
            append(("[", len(item)))
            sign_into(item, key, seen)
        elif item is None or isinstance(item, _KEYED_VALUES):
            append(item)
        elif isinstance(item, dict):
            append(("{", tuple(item)))
            sign_into(item.values(), key, seen)
        else:
            raise NoSignature       # another object (a profiler handle): not kept in a key


class CostMemo:
    """:func:`op_cost` of each distinct call signature (:func:`op_signature`), computed once.

    A training loop repeats the same calls every step (the same ops on the same shapes), so
    after the first step every op's cost is a dictionary lookup; calls of an op that
    :func:`is_free` says costs nothing whatever its arguments (views, allocations: half the
    calls of a training step) need no signature at all. The result is the one
    :func:`op_cost` would give: the key holds everything it reads, and ops whose cost reads
    values (:data:`VALUE_DEPENDENT`) are priced in full every time. Data-dependent control
    flow needs no care here: whichever ops a branch runs are priced, each by its own key.
    With ``verify`` every call is priced in full as well and a memoised cost that differs
    raises (the tests run models both ways).

    The memo holds at most ``limit`` signatures (a model fed ever-new shapes starts again
    from empty rather than grow without bound); ``limit=0`` memoises nothing: every call
    is priced in full (the reference the tests compare with).
    """

    def __init__(self, verify: bool = False, limit: int = 100_000):
        self.verify = verify
        self.limit = limit
        self.costs: dict[tuple, tuple] = {}
        self.hits = self.misses = 0

    def cost(self, func, args, kwargs, out) -> tuple[dict[str, int], int, int, str]:
        """:func:`op_cost` of this call (its counts dict is shared: do not change it)."""
        if self.limit and is_free(func):
            # half the calls of a training step are views and allocations: their cost
            # needs no signature (issue 36); answered without pricing, counted as hits
            self.hits += 1
            return _FREE_COST
        key = op_signature(func, args, kwargs, out) if self.limit else None
        if key is None:
            self.misses += 1
            return op_cost(func, args, kwargs, out)
        try:
            cost = self.costs.get(key, _SIGNATURE_MISS)
        except TypeError:        # an unhashable argument: price this call in full
            self.misses += 1
            return op_cost(func, args, kwargs, out)
        if cost is _SIGNATURE_MISS:
            self.misses += 1
            cost = op_cost(func, args, kwargs, out)
            if len(self.costs) >= self.limit:
                self.costs.clear()
            self.costs[key] = cost
            return cost
        self.hits += 1
        if self.verify:
            full = op_cost(func, args, kwargs, out)
            if full != cost:
                raise AssertionError(f"CostMemo: {func} priced {full} in full but {cost} "
                                     f"from its signature; op_signature misses what differs")
        return cost
