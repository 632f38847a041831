"""neuroedge: the public facade re-exports deploy's estimate API and implements nothing."""
import doctest
import os
import subprocess
import sys
from pathlib import Path

import neuroedge
from deploy import estimate as estimate_module
from deploy import estimate_result, nir_estimate


def test_the_facade_is_the_implementation_below_it():
    assert neuroedge.estimate is estimate_module.estimate
    assert neuroedge.Estimate is estimate_result.Estimate
    assert neuroedge.estimate_nir is nir_estimate.estimate_nir
    assert neuroedge.estimate_spiking_module is nir_estimate.estimate_spiking_module


def test_every_public_name_resolves_and_none_is_defined_in_the_facade():
    assert set(neuroedge.__all__) == {"estimate", "Estimate", "estimate_nir",
                                      "estimate_spiking_module", "NeuroedgeError",
                                      "__version__"}
    for name in neuroedge.__all__:
        obj = getattr(neuroedge, name)
        if name != "__version__":   # the error every refusal raises lives in hw_profiles
            assert obj.__module__.startswith(("deploy.", "hw_profiles.errors")), \
                (name, obj.__module__)
    assert isinstance(neuroedge.__version__, str) and neuroedge.__version__


def test_the_docstring_example_runs():
    # Linear 4 -> 3 on a batch of 2: 2 x 4 x 3 = 24 mac_fp32, as the example prints
    result = doctest.testmod(neuroedge, verbose=False)
    assert result.attempted == 3 and result.failed == 0


def test_importing_the_facade_loads_no_torch():
    # torch is imported inside estimate's functions, so `import neuroedge` stays light
    code = "import sys, neuroedge; print('torch' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}   # this tree's
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "False"
