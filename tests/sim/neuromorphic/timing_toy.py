"""A toy chip with a per-core step-time model, built from tests/data/toy-neuro.toml.

Round numbers for hand arithmetic: per-core times synop 1 ns, active update 10 ns, idle update
2 ns, spike 5 ns, learning update 7 ns; barrier 100 ns (one value unless ``one_router``
is given); 2 x 2 mesh, one core per router; static power 1 mW.
"""

from conftest import TOY_NEURO as TOY  # noqa: E402

import hw_profiles


def toy_chip(name="toy-timed", **kw):
    """The toy chip as a loaded profile (keywords as :func:`toy_text`)."""
    return hw_profiles.loads(toy_text(name=name, **kw), origin=f"{name}.toml")


def toy_text(neurons_per_core=2, barrier=100.0, one_router=None, tick=None, payload_bits=None,
             fan_in=10, synapse_bytes=64, name="toy-timed"):
    """TOML text of the toy chip."""
    text = TOY.read_text().replace('name = "toy-neuro"', f'name = "{name}"')
    text = text.replace('neurons_per_core = { value = 8,',
                        f'neurons_per_core = {{ value = {neurons_per_core},')
    text = text.replace('fan_in_per_core = { value = 10,',
                        f'fan_in_per_core = {{ value = {fan_in},')
    text = text.replace('synapse_bytes_per_core = { value = 64,',
                        f'synapse_bytes_per_core = {{ value = {synapse_bytes},')
    if payload_bits is not None:
        text = text.replace("[static]", f'spike_payload_bits = {{ value = {payload_bits}, '
                            'unit = "bit", provenance = "specified", source = "toy" }\n\n[static]')
    q = 'unit = "ns", provenance = "specified", source = "toy"'
    sync = f'barrier_ns = {{ value = {barrier}, {q} }}\n'
    if one_router is not None:
        sync += f'barrier_one_router_ns = {{ value = {one_router}, {q} }}\n'
    if tick is not None:
        sync += f'tick_ns = {{ value = {tick}, {q} }}\n'
    text = text.replace("[sources.toy]", f"""[core_op_ns]
synop = {{ value = 1.0, {q} }}
neuron_update_active = {{ value = 10.0, {q} }}
neuron_update_idle = {{ value = 2.0, {q} }}
spike = {{ value = 5.0, {q} }}
syn_update = {{ value = 7.0, {q} }}

[step_sync]
{sync}
[sources.toy]""")
    return text
