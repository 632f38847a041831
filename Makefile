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

# Debian packages the tests and the Fashion-MNIST runs need: the data set, and an ARM
# toolchain + qemu so exported C runs on an emulated Cortex-M. Installed when make runs as
# root; otherwise the exact apt-get line is printed and the tests that need them skip.
DEBIAN_PACKAGES := dataset-fashion-mnist gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm

.PHONY: demo test test-slow clean debian-packages

$(STAMP): pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH_PIN)"
	$(VENV)/bin/python -m pip install -q -e ".[dev,export]"
	touch $(STAMP)

debian-packages:
	@missing=""; for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo "installing Debian packages:$$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	else \
		echo "missing Debian packages (the tests that need them skip):$$missing"; \
		echo "install them with: sudo apt-get update && sudo apt-get install -y$$missing"; \
	fi

# --force: a second `make demo` replaces the demo's own run file and report
demo: $(STAMP) debian-packages
	$(VENV)/bin/neuroedge simulate --force
	@echo '$(NEXT_HINT)'

# the hint comes last whether the tests pass or not; make still fails when they fail
test: $(STAMP) debian-packages
	$(VENV)/bin/python -m pytest -q; status=$$?; echo '$(NEXT_HINT)'; exit $$status

test-slow: $(STAMP) debian-packages
	# exit 5 = no test carries the slow marker yet: not a failure
	$(VENV)/bin/python -m pytest -q -m slow || test $$? -eq 5

clean:
	rm -rf $(VENV) build *.egg-info
