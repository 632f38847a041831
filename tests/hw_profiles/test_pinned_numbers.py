"""Every number of every shipped profile, pinned to its value and its source key (issue 13 item 6).

One table, one dict literal per profile: ``"dotted.key": (value, source)``. The keys are walked
from the parsed TOML itself (not from the loader's dataclasses), so a new section or a new field
added to a shipped profile is covered without touching this file's code: a quantity without a
row fails ``test_every_shipped_quantity_has_a_pin``, and a row whose quantity is gone fails
``test_every_pin_is_still_shipped``. Multiplying any shipped number by 10 fails
``test_pinned_value_and_source``.

When a profile number changes on purpose, update its row here in the same commit (the row is
the reviewable record of the change). ``DERIVED`` recomputes the arithmetic of a representative
subset of ``derivation`` strings, so a value that drifts from its own stated derivation fails too.

Dotted keys: ``section.key`` for tables (``energy_pj.synop``), ``memory.<level>.<field>`` for the
``[[memory]]`` entries, ``technology_node_nm`` at the top level.
"""
from __future__ import annotations

import math
import tomllib

import pytest

from hw_profiles.loader import DATA_DIR, available

PINS: dict[str, dict[str, tuple[float, str]]] = {
    'a100': {
        'technology_node_nm': (7, 'nvidia_a100_whitepaper'),
        'energy_pj.mac_fp64': (29.7039, 'nvidia_a100_datasheet'),
        'energy_pj.flop_fp64': (59.7141, 'nvidia_a100_datasheet'),
        'energy_pj.mac_fp32': (29.7039, 'nvidia_a100_datasheet'),
        'energy_pj.flop_fp32': (29.7039, 'nvidia_a100_datasheet'),
        'energy_pj.mac_fp16': (1.85649, 'nvidia_a100_datasheet'),
        'energy_pj.mac_bf16': (1.85649, 'nvidia_a100_datasheet'),
        'energy_pj.mac_int8': (0.928247, 'nvidia_a100_datasheet'),
        'energy_pj.flop_fp16': (7.42598, 'nvidia_a100_whitepaper'),
        'energy_pj.flop_bf16': (14.852, 'nvidia_a100_whitepaper'),
        'energy_pj.int_add': (29.7161, 'cuda_guide'),
        'energy_pj.int_cmp': (29.7161, 'cuda_guide'),
        'energy_pj.int_mul': (29.7161, 'cuda_guide'),
        'throughput.mac_fp64': (9750000000000.0, 'nvidia_a100_datasheet'),
        'throughput.flop_fp64': (4850000000000.0, 'nvidia_a100_datasheet'),
        'throughput.mac_fp32': (9750000000000.0, 'nvidia_a100_datasheet'),
        'throughput.flop_fp32': (9750000000000.0, 'nvidia_a100_datasheet'),
        'throughput.mac_fp16': (156000000000000.0, 'nvidia_a100_datasheet'),
        'throughput.mac_bf16': (156000000000000.0, 'nvidia_a100_datasheet'),
        'throughput.mac_int8': (312000000000000.0, 'nvidia_a100_datasheet'),
        'throughput.flop_fp16': (39000000000000.0, 'nvidia_a100_whitepaper'),
        'throughput.flop_bf16': (19500000000000.0, 'nvidia_a100_whitepaper'),
        'throughput.int_add': (9746000000000.0, 'cuda_guide'),
        'throughput.int_cmp': (9746000000000.0, 'cuda_guide'),
        'throughput.int_mul': (9746000000000.0, 'cuda_guide'),
        'memory.offchip.capacity_bytes': (42949672960, 'nvidia_a100_datasheet'),
        'memory.offchip.read_pj_per_byte': (31.76, 'oconnor2017'),
        'memory.offchip.write_pj_per_byte': (31.76, 'oconnor2017'),
        'memory.offchip.bandwidth_bytes_per_s': (1555000000000.0, 'nvidia_a100_datasheet'),
        'memory.shared.capacity_bytes': (41943040, 'nvidia_a100_whitepaper'),
        'memory.shared.read_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.write_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.bandwidth_bytes_per_s': (7219000000000.0, 'nvidia_a100_whitepaper'),
        'limits.clock_hz': (1410000000, 'nvidia_a100_whitepaper'),
        'execution.board_power_w': (400, 'nvidia_a100_datasheet'),
        'execution.launch_s': (5e-06, 'pytorch_dispatch_lesson'),
        'execution.half_perf_ops': (27648, 'jia2018_volta'),
        'static.power_w': (61, 'peerread_a100_idle'),
    },
    'cortex-m4': {
        'technology_node_nm': (90, 'st_f407_page'),
        'energy_pj.int_add': (785.4, 'st_f407_page'),
        'energy_pj.int_cmp': (785.4, 'st_f407_page'),
        'energy_pj.int_mul': (785.4, 'st_f407_page'),
        'energy_pj.and_word': (785.4, 'st_f407_page'),
        'energy_pj.or_word': (785.4, 'st_f407_page'),
        'energy_pj.xor_word': (785.4, 'st_f407_page'),
        'energy_pj.not_word': (785.4, 'st_f407_page'),
        'energy_pj.xnor_word': (1570.8, 'st_f407_page'),
        'energy_pj.popcount_word': (14137.2, 'st_f407_page'),
        'energy_pj.mac_fp32': (2356.2, 'st_f407_page'),
        'energy_pj.flop_fp32': (785.4, 'st_f407_page'),
        'energy_pj.mac_int8': (392.7, 'st_f407_page'),
        'throughput.int_add': (168000000.0, 'arm_m4_trm'),
        'throughput.int_cmp': (168000000.0, 'arm_m4_trm'),
        'throughput.int_mul': (168000000.0, 'arm_m4_trm'),
        'throughput.and_word': (168000000.0, 'arm_m4_trm'),
        'throughput.or_word': (168000000.0, 'arm_m4_trm'),
        'throughput.xor_word': (168000000.0, 'arm_m4_trm'),
        'throughput.not_word': (168000000.0, 'arm_m4_trm'),
        'throughput.xnor_word': (84000000.0, 'arm_m4_trm'),
        'throughput.popcount_word': (9333000.0, 'libgcc'),
        'throughput.mac_fp32': (56000000.0, 'arm_m4_trm'),
        'throughput.flop_fp32': (168000000.0, 'arm_m4_trm'),
        'throughput.mac_int8': (336000000.0, 'arm_m4_trm'),
        'memory.local.capacity_bytes': (196608, 'st_f407_page'),
        'memory.local.read_pj_per_byte': (196.35, 'arm_m4_trm'),
        'memory.local.write_pj_per_byte': (196.35, 'arm_m4_trm'),
        'memory.local.bandwidth_bytes_per_s': (672000000.0, 'arm_m4_trm'),
        'memory.nonvolatile.capacity_bytes': (1048576, 'st_f407_page'),
        'memory.nonvolatile.read_pj_per_byte': (441.8, 'rm0090'),
        'memory.nonvolatile.write_pj_per_byte': (527800.0, 'ds8626'),
        'memory.nonvolatile.bandwidth_bytes_per_s': (448000000.0, 'rm0090'),
        'limits.word_bits': (32, 'arm_m4_trm'),
        'limits.weight_bits': (32, 'arm_m4_trm'),
        'limits.clock_hz': (168000000, 'st_f407_page'),
        'static.power_w': (0.0, 'st_f407_page'),
    },
    'cortex-m7': {
        'technology_node_nm': (90, 'semiaccurate_m7'),
        'energy_pj.int_add': (392.7, 'st_f407_page'),
        'energy_pj.int_cmp': (392.7, 'st_f407_page'),
        'energy_pj.int_mul': (785.4, 'st_f407_page'),
        'energy_pj.and_word': (392.7, 'st_f407_page'),
        'energy_pj.or_word': (392.7, 'st_f407_page'),
        'energy_pj.xor_word': (392.7, 'st_f407_page'),
        'energy_pj.not_word': (392.7, 'st_f407_page'),
        'energy_pj.xnor_word': (785.4, 'st_f407_page'),
        'energy_pj.popcount_word': (10995.6, 'st_f407_page'),
        'energy_pj.mac_fp32': (785.4, 'elektronik_m7_dsp'),
        'energy_pj.flop_fp32': (785.4, 'elektronik_m7_dsp'),
        'energy_pj.mac_int8': (392.7, 'st_f407_page'),
        'throughput.int_add': (432000000.0, 'aps_m7_pipeline'),
        'throughput.int_cmp': (432000000.0, 'aps_m7_pipeline'),
        'throughput.int_mul': (216000000.0, 'aps_m7_pipeline'),
        'throughput.and_word': (432000000.0, 'aps_m7_pipeline'),
        'throughput.or_word': (432000000.0, 'aps_m7_pipeline'),
        'throughput.xor_word': (432000000.0, 'aps_m7_pipeline'),
        'throughput.not_word': (432000000.0, 'aps_m7_pipeline'),
        'throughput.xnor_word': (216000000.0, 'aps_m7_pipeline'),
        'throughput.popcount_word': (15430000.0, 'libgcc'),
        'throughput.mac_fp32': (216000000.0, 'elektronik_m7_dsp'),
        'throughput.flop_fp32': (216000000.0, 'elektronik_m7_dsp'),
        'throughput.mac_int8': (432000000.0, 'aps_m7_pipeline'),
        'memory.local.capacity_bytes': (327680, 'kernel_f746'),
        'memory.local.read_pj_per_byte': (196.35, 'st_f407_page'),
        'memory.local.write_pj_per_byte': (196.35, 'st_f407_page'),
        'memory.local.bandwidth_bytes_per_s': (864000000.0, 'arm_community_f7'),
        'memory.nonvolatile.capacity_bytes': (1048576, 'kernel_f746'),
        'memory.nonvolatile.read_pj_per_byte': (368.16, 'arm_community_f7'),
        'memory.nonvolatile.write_pj_per_byte': (678585.6, 'ds8626'),
        'memory.nonvolatile.bandwidth_bytes_per_s': (864000000.0, 'arm_community_f7'),
        'limits.word_bits': (32, 'aps_m7_pipeline'),
        'limits.weight_bits': (32, 'aps_m7_pipeline'),
        'limits.clock_hz': (216000000, 'kernel_f746'),
        'static.power_w': (0.0, 'st_f407_page'),
    },
    'fpga-bnn': {
        'technology_node_nm': (28, 'xilinx_ds190'),
        'energy_pj.xnor_word': (194.5, 'finn2017'),
        'energy_pj.popcount_word': (194.5, 'finn2017'),
        'energy_pj.xor_word': (194.5, 'finn2017'),
        'energy_pj.and_word': (194.5, 'finn2017'),
        'energy_pj.or_word': (194.5, 'finn2017'),
        'energy_pj.not_word': (194.5, 'finn2017'),
        'energy_pj.int_add': (194.5, 'finn2017'),
        'energy_pj.int_cmp': (194.5, 'finn2017'),
        'throughput.xnor_word': (64260000000.0, 'finn2017'),
        'throughput.popcount_word': (64260000000.0, 'finn2017'),
        'throughput.xor_word': (64260000000.0, 'finn2017'),
        'throughput.and_word': (64260000000.0, 'finn2017'),
        'throughput.or_word': (64260000000.0, 'finn2017'),
        'throughput.not_word': (64260000000.0, 'finn2017'),
        'throughput.int_add': (64260000000.0, 'finn2017'),
        'throughput.int_cmp': (64260000000.0, 'finn2017'),
        'memory.local.capacity_bytes': (2511360, 'xilinx_ds190'),
        'memory.local.read_pj_per_byte': (0.0, 'finn2017'),
        'memory.local.write_pj_per_byte': (0.0, 'finn2017'),
        'memory.local.bandwidth_bytes_per_s': (981000000000.0, 'xilinx_ds190'),
        'memory.offchip.capacity_bytes': (1073741824, 'xilinx_ug954'),
        'memory.offchip.read_pj_per_byte': (243.75, 'horowitz2014'),
        'memory.offchip.write_pj_per_byte': (243.75, 'horowitz2014'),
        'memory.offchip.bandwidth_bytes_per_s': (12800000000.0, 'xilinx_ug954'),
        'limits.word_bits': (64, 'finn2017'),
        'limits.weight_bits': (1, 'finn2017'),
        'limits.clock_hz': (200000000, 'finn2017'),
        'static.power_w': (0.0, 'finn2017'),
    },
    'h100': {
        'technology_node_nm': (4, 'nvidia_h100_whitepaper'),
        'energy_pj.mac_fp64': (13.5404, 'nvidia_h100_datasheet'),
        'energy_pj.flop_fp64': (26.6826, 'nvidia_h100_datasheet'),
        'energy_pj.mac_fp32': (13.5404, 'nvidia_h100_datasheet'),
        'energy_pj.flop_fp32': (13.5404, 'nvidia_h100_datasheet'),
        'energy_pj.mac_fp16': (0.916835, 'nvidia_h100_datasheet'),
        'energy_pj.mac_bf16': (0.916835, 'nvidia_h100_datasheet'),
        'energy_pj.mac_int8': (0.458417, 'nvidia_h100_datasheet'),
        'energy_pj.flop_fp16': (6.78033, 'nvidia_h100_whitepaper'),
        'energy_pj.flop_bf16': (6.78033, 'nvidia_h100_whitepaper'),
        'energy_pj.int_add': (27.0808, 'nvidia_h100_whitepaper'),
        'energy_pj.int_cmp': (27.0808, 'nvidia_h100_whitepaper'),
        'energy_pj.int_mul': (27.0808, 'nvidia_h100_whitepaper'),
        'throughput.mac_fp64': (33500000000000.0, 'nvidia_h100_datasheet'),
        'throughput.flop_fp64': (17000000000000.0, 'nvidia_h100_datasheet'),
        'throughput.mac_fp32': (33500000000000.0, 'nvidia_h100_datasheet'),
        'throughput.flop_fp32': (33500000000000.0, 'nvidia_h100_datasheet'),
        'throughput.mac_fp16': (494750000000000.0, 'nvidia_h100_datasheet'),
        'throughput.mac_bf16': (494750000000000.0, 'nvidia_h100_datasheet'),
        'throughput.mac_int8': (989500000000000.0, 'nvidia_h100_datasheet'),
        'throughput.flop_fp16': (66900000000000.0, 'nvidia_h100_whitepaper'),
        'throughput.flop_bf16': (66900000000000.0, 'nvidia_h100_whitepaper'),
        'throughput.int_add': (16750000000000.0, 'nvidia_h100_whitepaper'),
        'throughput.int_cmp': (16750000000000.0, 'nvidia_h100_whitepaper'),
        'throughput.int_mul': (16750000000000.0, 'nvidia_h100_whitepaper'),
        'memory.offchip.capacity_bytes': (85899345920, 'nvidia_h100_datasheet'),
        'memory.offchip.read_pj_per_byte': (31.76, 'oconnor2017'),
        'memory.offchip.write_pj_per_byte': (31.76, 'oconnor2017'),
        'memory.offchip.bandwidth_bytes_per_s': (3350000000000.0, 'nvidia_h100_datasheet'),
        'memory.shared.capacity_bytes': (52428800, 'nvidia_h100_whitepaper'),
        'memory.shared.read_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.write_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.bandwidth_bytes_per_s': (10138000000000.0, 'nvidia_a100_whitepaper'),
        'limits.clock_hz': (1980000000, 'nvidia_h100_whitepaper'),
        'execution.board_power_w': (700, 'nvidia_h100_datasheet'),
        'execution.launch_s': (5e-06, 'pytorch_dispatch_lesson'),
        'execution.half_perf_ops': (67584, 'jia2018_volta'),
        'static.power_w': (140, 'gpuburn_h100_idle'),
    },
    'jetson-orin': {
        'energy_pj.mac_fp32': (9.45358, 'nvidia_orin_brief'),
        'energy_pj.flop_fp32': (9.45358, 'nvidia_orin_brief'),
        'energy_pj.mac_fp64': (602.212, 'cuda_guide'),
        'energy_pj.flop_fp64': (602.212, 'cuda_guide'),
        'energy_pj.mac_fp16': (1.17892, 'nvidia_orin_brief'),
        'energy_pj.mac_bf16': (1.17892, 'nvidia_orin_brief'),
        'energy_pj.mac_int8': (0.589459, 'nvidia_orin_brief'),
        'energy_pj.flop_fp16': (9.45358, 'nvidia_orin_brief'),
        'energy_pj.flop_bf16': (9.45358, 'nvidia_orin_brief'),
        'energy_pj.int_add': (18.8219, 'cuda_guide'),
        'energy_pj.int_cmp': (18.8219, 'cuda_guide'),
        'energy_pj.int_mul': (18.8219, 'cuda_guide'),
        'throughput.mac_fp32': (2650000000000.0, 'nvidia_orin_brief'),
        'throughput.flop_fp32': (2650000000000.0, 'nvidia_orin_brief'),
        'throughput.mac_fp64': (41600000000.0, 'cuda_guide'),
        'throughput.flop_fp64': (41600000000.0, 'cuda_guide'),
        'throughput.mac_fp16': (21250000000000.0, 'nvidia_orin_brief'),
        'throughput.mac_bf16': (21250000000000.0, 'nvidia_orin_brief'),
        'throughput.mac_int8': (42500000000000.0, 'nvidia_orin_brief'),
        'throughput.flop_fp16': (2650000000000.0, 'nvidia_orin_brief'),
        'throughput.flop_bf16': (2650000000000.0, 'nvidia_orin_brief'),
        'throughput.int_add': (1331000000000.0, 'cuda_guide'),
        'throughput.int_cmp': (1331000000000.0, 'cuda_guide'),
        'throughput.int_mul': (1331000000000.0, 'cuda_guide'),
        'memory.offchip.capacity_bytes': (68719476736, 'nvidia_orin_brief'),
        'memory.offchip.read_pj_per_byte': (160.0, 'dally2015'),
        'memory.offchip.write_pj_per_byte': (160.0, 'dally2015'),
        'memory.offchip.bandwidth_bytes_per_s': (204800000000.0, 'nvidia_orin_brief'),
        'memory.shared.capacity_bytes': (4194304, 'nvidia_orin_brief'),
        'memory.shared.read_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.write_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.bandwidth_bytes_per_s': (986100000000.0, 'nvidia_a100_whitepaper'),
        'limits.clock_hz': (1300000000, 'nvidia_orin_brief'),
        'execution.board_power_w': (60, 'nvidia_orin_brief'),
        'execution.launch_s': (5e-06, 'pytorch_dispatch_lesson'),
        'execution.half_perf_ops': (8192, 'jia2018_volta'),
        'static.power_w': (2.18, 'orin_nano_idle'),
    },
    'loihi': {
        'technology_node_nm': (14, 'davies2018'),
        'energy_pj.synop': (23.6, 'davies2018'),
        'energy_pj.syn_update': (120.0, 'davies2018'),
        'energy_pj.neuron_update_active': (81.0, 'davies2018'),
        'energy_pj.neuron_update_idle': (52.0, 'davies2018'),
        'energy_pj.spike': (1.7, 'davies2018'),
        'energy_pj.hop': (3.5, 'davies2018'),
        'throughput.synop': (36570000000.0, 'davies2018'),
        'throughput.syn_update': (20980000000.0, 'davies2018'),
        'throughput.neuron_update_active': (15240000000.0, 'davies2018'),
        'throughput.neuron_update_idle': (24150000000.0, 'davies2018'),
        'throughput.spike': (60950000000.0, 'davies2018'),
        'throughput.hop': (110080000000.0, 'davies2018'),
        'memory.local.capacity_bytes': (16777216, 'davies2018'),
        'memory.local.read_pj_per_byte': (0.0, 'davies2018'),
        'memory.local.write_pj_per_byte': (0.0, 'davies2018'),
        'memory.local.bandwidth_bytes_per_s': (292600000000.0, 'davies2018'),
        'interconnect.mesh_x': (8, 'boyle2025'),
        'interconnect.mesh_y': (4, 'boyle2025'),
        'interconnect.cores_per_router': (4, 'boyle2025'),
        'interconnect.bits_per_packet': (32, 'davies2021'),
        'limits.cores': (128, 'davies2018'),
        'limits.neurons_per_core': (1024, 'davies2018'),
        'limits.synapse_bytes_per_core': (131072, 'davies2018'),
        'limits.fan_in_per_core': (4096, 'davies2018'),
        'limits.fan_out_per_core': (4096, 'davies2018'),
        'limits.weight_bits': (9, 'davies2018'),
        'limits.weight_sharing': (1, 'rueckauer2021'),
        'static.power_w': (0.104375, 'frady2020'),
        'core_op_ns.synop': (3.5, 'davies2018'),
        'core_op_ns.syn_update': (6.1, 'davies2018'),
        'core_op_ns.neuron_update_active': (8.4, 'davies2018'),
        'core_op_ns.neuron_update_idle': (5.3, 'davies2018'),
        'core_op_ns.spike': (2.1, 'davies2018'),
        'step_sync.barrier_ns': (465.0, 'davies2018'),
        'step_sync.barrier_one_router_ns': (113.0, 'davies2018'),
    },
    'loihi-pohoiki-beach': {
        'technology_node_nm': (14, 'davies2018'),
        'energy_pj.synop': (23.6, 'davies2018'),
        'energy_pj.syn_update': (120.0, 'davies2018'),
        'energy_pj.neuron_update_active': (81.0, 'davies2018'),
        'energy_pj.neuron_update_idle': (52.0, 'davies2018'),
        'energy_pj.spike': (1.7, 'davies2018'),
        'energy_pj.hop': (3.5, 'davies2018'),
        'energy_pj.chip_hop': (3.5, 'davies2018'),
        'throughput.synop': (2340600000000.0, 'davies2018'),
        'throughput.syn_update': (1343000000000.0, 'davies2018'),
        'throughput.neuron_update_active': (975240000000.0, 'davies2018'),
        'throughput.neuron_update_idle': (1545700000000.0, 'davies2018'),
        'throughput.spike': (3901000000000.0, 'davies2018'),
        'throughput.hop': (7045120000000.0, 'davies2018'),
        'throughput.chip_hop': (110080000000.0, 'davies2018'),
        'memory.local.capacity_bytes': (1073741824, 'davies2018'),
        'memory.local.read_pj_per_byte': (0.0, 'davies2018'),
        'memory.local.write_pj_per_byte': (0.0, 'davies2018'),
        'memory.local.bandwidth_bytes_per_s': (18725000000000.0, 'davies2018'),
        'interconnect.mesh_x': (8, 'boyle2025'),
        'interconnect.mesh_y': (4, 'boyle2025'),
        'interconnect.chips_x': (8, 'pcworld2019'),
        'interconnect.chips_y': (8, 'pcworld2019'),
        'interconnect.cores_per_router': (4, 'boyle2025'),
        'interconnect.bits_per_packet': (32, 'davies2021'),
        'limits.cores': (8192, 'pcworld2019'),
        'limits.neurons_per_core': (1024, 'davies2018'),
        'limits.synapse_bytes_per_core': (131072, 'davies2018'),
        'limits.fan_in_per_core': (4096, 'davies2018'),
        'limits.fan_out_per_core': (4096, 'davies2018'),
        'limits.weight_bits': (9, 'davies2018'),
        'limits.weight_sharing': (1, 'rueckauer2021'),
        'static.power_w': (6.68, 'frady2020'),
        'core_op_ns.synop': (3.5, 'davies2018'),
        'core_op_ns.syn_update': (6.1, 'davies2018'),
        'core_op_ns.neuron_update_active': (8.4, 'davies2018'),
        'core_op_ns.neuron_update_idle': (5.3, 'davies2018'),
        'core_op_ns.spike': (2.1, 'davies2018'),
        'step_sync.barrier_ns': (465.0, 'davies2018'),
        'step_sync.barrier_one_router_ns': (113.0, 'davies2018'),
    },
    'loihi2': {
        'technology_node_nm': (4, 'intel_loihi2_brief'),
        'energy_pj.synop': (6.842, 'intel_halapoint'),
        'energy_pj.neuron_update_active': (10.83, 'intel_halapoint'),
        'energy_pj.neuron_update_idle': (6.955, 'davies2018'),
        'energy_pj.syn_update': (34.79, 'davies2018'),
        'energy_pj.spike': (1.7, 'davies2018'),
        'energy_pj.hop': (3.5, 'davies2018'),
        'throughput.synop': (329900000000.0, 'intel_halapoint'),
        'throughput.neuron_update_active': (208300000000.0, 'intel_halapoint'),
        'throughput.neuron_update_idle': (330200000000.0, 'davies2018'),
        'throughput.syn_update': (104900000000.0, 'intel_loihi2_brief'),
        'throughput.spike': (609500000000.0, 'intel_loihi2_brief'),
        'throughput.hop': (379800000000.0, 'intel_halapoint'),
        'memory.local.capacity_bytes': (25165824, 'intel_loihi2_brief'),
        'memory.local.read_pj_per_byte': (0.0, 'intel_halapoint'),
        'memory.local.write_pj_per_byte': (0.0, 'intel_halapoint'),
        'memory.local.bandwidth_bytes_per_s': (13890000000000.0, 'intel_halapoint'),
        'interconnect.mesh_x': (8, 'timcheck2026'),
        'interconnect.mesh_y': (4, 'timcheck2026'),
        'interconnect.cores_per_router': (4, 'timcheck2026'),
        'interconnect.bits_per_packet': (64, 'davies2021'),
        'limits.cores': (128, 'intel_loihi2_brief'),
        'limits.neurons_per_core': (8192, 'intel_loihi2_brief'),
        'limits.synapse_bytes_per_core': (131072, 'intel_loihi2_brief'),
        'limits.fan_in_per_core': (4096, 'davies2018'),
        'limits.fan_out_per_core': (4096, 'davies2018'),
        'limits.weight_bits': (8, 'lava_dense'),
        'limits.weight_sharing': (1, 'rueckauer2021'),
        'limits.spike_payload_bits': (32, 'intel_loihi2_brief'),
        'static.power_w': (0.05393, 'frady2020'),
        'core_op_ns.synop': (0.388, 'intel_halapoint'),
        'core_op_ns.neuron_update_active': (0.6145, 'intel_halapoint'),
        'core_op_ns.neuron_update_idle': (0.3876, 'davies2018'),
        'core_op_ns.syn_update': (1.2202, 'intel_loihi2_brief'),
        'core_op_ns.spike': (0.21, 'intel_loihi2_brief'),
        'step_sync.barrier_ns': (465.0, 'davies2018'),
        'step_sync.barrier_one_router_ns': (113.0, 'davies2018'),
    },
    'spinnaker2': {
        'technology_node_nm': (22, 'hoeppner2021'),
        'energy_pj.synop': (450.0, 'kerasspiking'),
        'energy_pj.neuron_update_active': (2190.0, 'kerasspiking'),
        'energy_pj.neuron_update_idle': (2190.0, 'kerasspiking'),
        'energy_pj.spike': (0.0, 'kerasspiking'),
        'energy_pj.hop': (0.0, 'hoeppner2021'),
        'throughput.synop': (1900000000.0, 'rhodes2018'),
        'throughput.neuron_update_active': (390400000.0, 'kerasspiking'),
        'throughput.neuron_update_idle': (390400000.0, 'kerasspiking'),
        'throughput.spike': (390400000.0, 'kerasspiking'),
        'throughput.hop': (9500000000.0, 'hoeppner2021'),
        'memory.local.capacity_bytes': (19922944, 'hoeppner2021'),
        'memory.local.read_pj_per_byte': (0.0, 'kerasspiking'),
        'memory.local.write_pj_per_byte': (0.0, 'kerasspiking'),
        'memory.local.bandwidth_bytes_per_s': (152000000000.0, 'hoeppner2021'),
        'interconnect.mesh_x': (8, 'hoeppner2021'),
        'interconnect.mesh_y': (5, 'hoeppner2021'),
        'interconnect.cores_per_router': (4, 'hoeppner2021'),
        'interconnect.bits_per_packet': (40, 'furber2014'),
        'limits.cores': (152, 'hoeppner2021'),
        'limits.neurons_per_core': (255, 'hbp_guidebook'),
        'limits.synapse_bytes_per_core': (131072, 'hoeppner2021'),
        'limits.fan_in_per_core': (32768, 'rhodes2018'),
        'limits.fan_out_per_core': (255, 'furber2014'),
        'limits.weight_bits': (16, 'rhodes2018'),
        'limits.clock_hz': (250000000, 'eenews2021'),
        'static.power_w': (0.0, 'hoeppner2021'),
        'core_op_ns.synop': (80.0, 'rhodes2018'),
        'core_op_ns.neuron_update_active': (389.2, 'kerasspiking'),
        'core_op_ns.neuron_update_idle': (389.2, 'kerasspiking'),
        'core_op_ns.spike': (0.0, 'kerasspiking'),
        'step_sync.barrier_ns': (0.0, 'rhodes2018'),
        'step_sync.tick_ns': (1000000.0, 'rhodes2018'),
    },
    'truenorth': {
        'technology_node_nm': (28, 'merolla2014'),
        'energy_pj.synop': (2.5, 'merolla2014'),
        'energy_pj.neuron_update_active': (0.0, 'merolla2014'),
        'energy_pj.neuron_update_idle': (0.0, 'merolla2014'),
        'energy_pj.spike': (0.0, 'merolla2014'),
        'energy_pj.hop': (0.0, 'merolla2014'),
        'throughput.synop': (268400000000.0, 'merolla2014'),
        'throughput.neuron_update_active': (1049000000.0, 'merolla2014'),
        'throughput.neuron_update_idle': (1049000000.0, 'merolla2014'),
        'throughput.spike': (1049000000.0, 'merolla2014'),
        'throughput.hop': (1049000000.0, 'merolla2014'),
        'memory.local.capacity_bytes': (33554432, 'merolla2014'),
        'memory.local.read_pj_per_byte': (0.0, 'merolla2014'),
        'memory.local.write_pj_per_byte': (0.0, 'merolla2014'),
        'memory.local.bandwidth_bytes_per_s': (33550000000.0, 'merolla2014'),
        'interconnect.mesh_x': (64, 'merolla2014'),
        'interconnect.mesh_y': (64, 'merolla2014'),
        'interconnect.cores_per_router': (1, 'merolla2014'),
        'interconnect.bits_per_packet': (30, 'merolla2014'),
        'limits.cores': (4096, 'merolla2014'),
        'limits.neurons_per_core': (256, 'merolla2014'),
        'limits.synapse_bytes_per_core': (8192, 'merolla2014'),
        'limits.fan_in_per_core': (256, 'merolla2014'),
        'limits.fan_out_per_core': (256, 'merolla2014'),
        'limits.weight_bits': (9, 'merolla2014'),
        'static.power_w': (0.0631, 'merolla2014'),
        'core_op_ns.synop': (15.26, 'merolla2014'),
        'core_op_ns.neuron_update_active': (0.0, 'merolla2014'),
        'core_op_ns.neuron_update_idle': (0.0, 'merolla2014'),
        'core_op_ns.spike': (0.0, 'merolla2014'),
        'step_sync.barrier_ns': (0.0, 'merolla2014'),
        'step_sync.tick_ns': (1000000.0, 'merolla2014'),
    },
    'x86-avx2': {
        'technology_node_nm': (22, 'intel_ark'),
        'energy_pj.mac_fp32': (253.393, 'uops_info'),
        'energy_pj.flop_fp32': (253.393, 'uops_info'),
        'energy_pj.mac_fp64': (506.786, 'uops_info'),
        'energy_pj.flop_fp64': (506.786, 'uops_info'),
        'energy_pj.int_add': (253.393, 'uops_info'),
        'energy_pj.int_cmp': (253.393, 'uops_info'),
        'energy_pj.int_mul': (506.786, 'uops_info'),
        'energy_pj.xor_word': (337.857, 'uops_info'),
        'energy_pj.and_word': (337.857, 'uops_info'),
        'energy_pj.or_word': (337.857, 'uops_info'),
        'energy_pj.not_word': (337.857, 'uops_info'),
        'energy_pj.xnor_word': (675.714, 'uops_info'),
        'energy_pj.popcount_word': (4054.29, 'uops_info'),
        'throughput.mac_fp32': (224000000000.0, 'uops_info'),
        'throughput.flop_fp32': (224000000000.0, 'uops_info'),
        'throughput.mac_fp64': (112000000000.0, 'uops_info'),
        'throughput.flop_fp64': (112000000000.0, 'uops_info'),
        'throughput.int_add': (224000000000.0, 'uops_info'),
        'throughput.int_cmp': (224000000000.0, 'uops_info'),
        'throughput.int_mul': (112000000000.0, 'uops_info'),
        'throughput.xor_word': (168000000000.0, 'uops_info'),
        'throughput.and_word': (168000000000.0, 'uops_info'),
        'throughput.or_word': (168000000000.0, 'uops_info'),
        'throughput.not_word': (168000000000.0, 'uops_info'),
        'throughput.xnor_word': (84000000000.0, 'uops_info'),
        'throughput.popcount_word': (14000000000.0, 'uops_info'),
        'memory.local.capacity_bytes': (131072, 'intel_opt_manual'),
        'memory.local.read_pj_per_byte': (2.5, 'horowitz2014'),
        'memory.local.write_pj_per_byte': (2.5, 'horowitz2014'),
        'memory.local.bandwidth_bytes_per_s': (896000000000.0, 'intel_opt_manual'),
        'memory.shared.capacity_bytes': (8388608, 'intel_ark'),
        'memory.shared.read_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.write_pj_per_byte': (12.5, 'horowitz2014'),
        'memory.shared.bandwidth_bytes_per_s': (448000000000.0, 'intel_opt_manual'),
        'memory.offchip.capacity_bytes': (34359738368, 'intel_ark'),
        'memory.offchip.read_pj_per_byte': (243.75, 'horowitz2014'),
        'memory.offchip.write_pj_per_byte': (243.75, 'horowitz2014'),
        'memory.offchip.bandwidth_bytes_per_s': (25600000000.0, 'intel_ark'),
        'limits.word_bits': (64, 'intel_ark'),
        'limits.clock_hz': (3500000000, 'intel_ark'),
        'execution.board_power_w': (84, 'intel_ark'),
        'execution.launch_s': (3.34e-06, 'pytorch_split_bench'),
        'execution.half_perf_ops': (320, 'uops_info'),
        'static.power_w': (21, 'spcr_4770k'),
    },
}


def _quantities(doc: dict, prefix: str = ""):
    """Yield ``(dotted key, quantity table)`` for every ``{value = ...}`` table in ``doc``."""
    for key, val in doc.items():
        if key == "sources":
            continue
        path = f"{prefix}{key}"
        if isinstance(val, dict):
            if "value" in val:
                yield path, val
            else:
                yield from _quantities(val, path + ".")
        elif isinstance(val, list):
            for i, entry in enumerate(val):
                if isinstance(entry, dict):
                    # [[memory]] entries are named by their logical level (one per level)
                    name = entry.get("level", str(i))
                    yield from _quantities(entry, f"{path}.{name}.")


def _shipped() -> dict[str, dict[str, dict]]:
    out = {}
    for name in available():
        doc = tomllib.loads((DATA_DIR / f"{name}.toml").read_text())
        out[name] = dict(_quantities(doc))
    return out


SHIPPED = _shipped()
ROWS = [(p, k) for p in sorted(PINS) for k in sorted(PINS[p])]


def test_every_shipped_profile_has_a_table():
    assert sorted(SHIPPED) == sorted(PINS)


@pytest.mark.parametrize("profile", sorted(SHIPPED))
def test_every_shipped_quantity_has_a_pin(profile):
    missing = sorted(set(SHIPPED[profile]) - set(PINS.get(profile, {})))
    assert not missing, (f"{profile}.toml has quantities without a pin in "
                         f"tests/hw_profiles/test_pinned_numbers.py: {missing}")


@pytest.mark.parametrize("profile", sorted(PINS))
def test_every_pin_is_still_shipped(profile):
    gone = sorted(set(PINS[profile]) - set(SHIPPED.get(profile, {})))
    assert not gone, f"pins for quantities no longer in {profile}.toml: {gone}"


@pytest.mark.parametrize("profile,key", ROWS)
def test_pinned_value_and_source(profile, key):
    q = SHIPPED[profile].get(key)
    if q is None:
        pytest.fail(f"{profile}.toml has no quantity {key}")
    value, source = PINS[profile][key]
    # exact: the TOML literal and the pin are the same decimal, so they parse to the same float
    assert q["value"] == value, f"{profile} {key} = {q['value']!r}, pinned {value!r}"
    assert q["source"] == source, f"{profile} {key} cites {q['source']!r}, pinned {source!r}"


# Arithmetic of stated derivations, recomputed here (inputs as the derivation strings give
# them). Values in the TOMLs are rounded to about 4 significant digits, hence rel = 5e-4.
DERIVED: dict[tuple[str, str], float] = {
    # Loihi: Davies 2018 Table 2 and Frady 2020 Table 1
    ("loihi", "throughput.synop"): 128 / 3.5e-9,
    ("loihi", "throughput.neuron_update_active"): 128 / 8.4e-9,
    ("loihi", "energy_pj.hop"): (3.0 + 4.0) / 2,
    ("loihi", "memory.local.capacity_bytes"): 128 * 128 * 1024,
    ("loihi", "memory.local.bandwidth_bytes_per_s"): 128 * 8 / 3.5e-9,
    ("loihi", "static.power_w"): 3.34 / 32,
    # Pohoiki Beach: 64 Loihi chips
    ("loihi-pohoiki-beach", "throughput.synop"): 64 * 128 / 3.5e-9,
    ("loihi-pohoiki-beach", "static.power_w"): 3.34 / 32 * 64,
    ("loihi-pohoiki-beach", "limits.cores"): 64 * 128,
    ("loihi-pohoiki-beach", "memory.local.capacity_bytes"): 64 * 128 * 128 * 1024,
    ("loihi-pohoiki-beach", "energy_pj.chip_hop"): (3.0 + 4.0) / 2,
    # TrueNorth: Merolla 2014 (26 pJ at 1,048,576 neurons x 20 Hz x 128 synapses; 400 GSOPS/W)
    ("truenorth", "energy_pj.synop"): 1e12 / 400e9,
    ("truenorth", "throughput.synop"): 4096 * 256 * 256 * 1000,
    ("truenorth", "static.power_w"): (26 - 2.5) * 1e-12 * 1_048_576 * 20 * 128,
    ("truenorth", "memory.local.capacity_bytes"): 4096 * 256 * 256 / 8,
    ("truenorth", "limits.synapse_bytes_per_core"): 256 * 256 / 8,
    # GPUs and CPU: board power / peak rate
    # gpu/cpu: (board - idle - DRAM at peak bandwidth) W / peak rate (sim/execution/gpu_cpu.py)
    ("a100", "energy_pj.mac_fp32"): (400 - 61 - 31.76 * 1.555) / 9.75e12 * 1e12,
    ("a100", "energy_pj.flop_fp32"): (400 - 61 - 31.76 * 1.555) / 9.75e12 * 1e12,
    ("a100", "memory.offchip.read_pj_per_byte"): 3.97 * 8,
    ("a100", "throughput.int_add"): 64 * 108 * 1.41e9,
    ("h100", "energy_pj.mac_int8"): (700 - 140 - 31.76 * 3.35) / (3958e12 / 4) * 1e12,
    ("jetson-orin", "energy_pj.mac_fp32"): (60 - 2.18 - 160 * 0.2048) / 2.65e12 * 1e12,
    ("x86-avx2", "energy_pj.mac_fp32"): (84 - 21 - 243.75 * 0.0256) / (4 * 3.5e9 * 2 * 8) * 1e12,
    ("x86-avx2", "throughput.mac_fp32"): 2 * 8 * 4 * 3.5e9,
    # Cortex-M4 (STM32F407: 238 uA/MHz x 3.3 V = 785.4 pJ per cycle at 168 MHz)
    ("cortex-m4", "energy_pj.int_add"): 238e-6 * 3.3 / 1e6 * 1e12,
    ("cortex-m4", "energy_pj.mac_fp32"): 3 * 785.4,
    ("cortex-m4", "memory.local.read_pj_per_byte"): 785.4 / 4,
    ("cortex-m4", "memory.nonvolatile.bandwidth_bytes_per_s"): 16 * 168e6 / 6,
    ("cortex-m7", "throughput.int_add"): 216e6 * 2,
    # FINN BNN fabric: < 25 W at 12.3e6 images/s x 334,336 binary MACs x 2 ops, 64 per word
    ("fpga-bnn", "energy_pj.xnor_word"): 25 / (12.3e6 * 334_336 * 2) * 64 * 1e12,
    ("fpga-bnn", "throughput.xnor_word"): 12.3e6 * 334_336 / 64,
    # Loihi 2: Hala Point 2,600 W / 380e12 synops/s; 380e12 / 1,152 chips
    ("loihi2", "energy_pj.synop"): 2600 / 380e12 * 1e12,
    ("loihi2", "throughput.synop"): 380e12 / 1152,
    ("spinnaker2", "memory.local.capacity_bytes"): 152 * 128 * 1024,
}


@pytest.mark.parametrize("profile,key", sorted(DERIVED))
def test_derivation_arithmetic(profile, key):
    q = SHIPPED[profile].get(key)
    if q is None:
        pytest.fail(f"{profile}.toml has no quantity {key} (update DERIVED)")
    assert q["provenance"] == "derived", f"{profile} {key} is {q['provenance']!r}, not derived"
    expected = DERIVED[(profile, key)]
    assert math.isclose(q["value"], expected, rel_tol=5e-4), \
        f"{profile} {key} = {q['value']!r}, its derivation gives {expected!r}"
