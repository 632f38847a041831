# Two commands: `make demo` runs the default simulation, `make test` runs the tests.
# Each bootstraps .venv when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# torch==2.13.0 first: it takes the CPU build that lies on the build machines instead of
# downloading a multi-GB CUDA build; the project's range then installs nothing more.
TORCH_PIN := torch==2.13.0

.PHONY: demo test test-slow bench clean

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH_PIN)"
	$(VENV)/bin/python -m pip install -q -e ".[dev,export]"
	touch $(STAMP)

# --force: a second `make demo` replaces the demo's own run file and report
demo: $(STAMP)
	$(VENV)/bin/neuroedge simulate --force

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q

test-slow: $(STAMP)
	# exit 5 = no test carries the slow marker yet: not a failure
	$(VENV)/bin/python -m pytest -q -m slow || test $$? -eq 5

clean:
	rm -rf $(VENV) build *.egg-info
