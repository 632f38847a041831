# Two commands: `make demo` runs the default simulation, `make test` runs the tests.
# Each bootstraps .venv when it is missing or older than pyproject.toml.
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# torch==2.13.0 first: it takes the CPU build that lies on the build machines instead of
# downloading a multi-GB CUDA build; the project's range then installs nothing more.
TORCH_PIN := torch==2.13.0
# the last line of `make demo` and `make test`: .venv/bin is not on PATH until activated
NEXT_HINT := next: `. .venv/bin/activate` puts neuroedge on PATH (then `neuroedge --help`), or run `.venv/bin/neuroedge`

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
	@echo '$(NEXT_HINT)'

# the hint comes last whether the tests pass or not; make still fails when they fail
test: $(STAMP)
	$(VENV)/bin/python -m pytest -q; status=$$?; echo '$(NEXT_HINT)'; exit $$status

test-slow: $(STAMP)
	# exit 5 = no test carries the slow marker yet: not a failure
	$(VENV)/bin/python -m pytest -q -m slow || test $$? -eq 5

clean:
	rm -rf $(VENV) build *.egg-info
