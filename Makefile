# Two commands: `make demo` runs the default simulation, `make test` runs the tests.
# Each bootstraps .venv when it is missing or older than pyproject.toml. `make lint` runs ruff
# (CI: .ci/run = lint, then test).
PYTHON ?= python3
VENV := .venv
STAMP := $(VENV)/.installed
# torch==2.13.0 first: it takes the CPU build that lies on the build machines instead of
# downloading a multi-GB CUDA build; the project's range then installs nothing more.
TORCH_PIN := torch==2.13.0
# the last line of `make demo` and `make test`: .venv/bin is not on PATH until activated
NEXT_HINT := next: `. .venv/bin/activate` puts neuroedge on PATH (then `neuroedge --help`), or run `.venv/bin/neuroedge`

# Debian packages the tests and the Fashion-MNIST runs need: the data set, an ARM
# toolchain + qemu so exported C runs on an emulated Cortex-M, and chromium so the HTML
# reports are checked in a real (headless) browser. Installed when make runs as
# root; otherwise the exact apt-get line is printed and the tests that need them skip
# (pytest -rs prints each skip's reason).
DEBIAN_PACKAGES := dataset-fashion-mnist gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm \
	chromium zsh fish
# Debian's python3 makes no venv without this one (ensurepip lives in it); nothing runs
# without .venv, so as another user make stops here with the apt-get line
VENV_PACKAGE := python3-venv

# $(call debian_install,PACKAGES,IF STILL MISSING): install those of PACKAGES that are missing
# when root (apt-get update first: a fresh machine has no package lists); when not root, or
# when apt-get fails (no network), print the apt-get line and run the shell command IF STILL
# MISSING (echo a note and go on, or exit 1 to stop)
define debian_install
missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
if [ -z "$$missing" ]; then :; \
elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	echo "installing Debian packages:$$missing"; \
	{ DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; } || \
	{ echo "apt-get could not install:$$missing (run: apt-get update && apt-get install -y$$missing)"; \
	  $(2); }; \
else \
	echo "missing Debian packages:$$missing"; \
	echo "install them with: sudo apt-get update && sudo apt-get install -y$$missing"; \
	$(2); \
fi
endef

.PHONY: demo test test-slow lint clean debian-packages

# a .venv left without pip by a failed first try is made again
$(STAMP): pyproject.toml
	@if command -v dpkg >/dev/null && ! $(PYTHON) -c "import ensurepip" 2>/dev/null; then \
		$(call debian_install,$(VENV_PACKAGE),echo "(make needs it to create $(VENV))"; exit 1); \
	fi
	test -x $(VENV)/bin/pip || { rm -rf $(VENV) && $(PYTHON) -m venv $(VENV); }
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH_PIN)"
	$(VENV)/bin/python -m pip install -q -e ".[dev,export]"
	# Norse, a NIR reader the tests run our exports in: --no-deps, since its torchvision
	# requirement (for its example tasks only) would replace the pinned CPU torch with a
	# CUDA build; it needs nothing else that is not installed already
	$(VENV)/bin/python -m pip install -q --no-deps norse==1.1.0
	touch $(STAMP)

# the tests that need a missing package skip, saying which (see DEBIAN_PACKAGES)
debian-packages:
	@$(call debian_install,$(DEBIAN_PACKAGES),echo "(the tests that need them skip)")

# --force: a second `make demo` replaces the demo's own run file and report
demo: $(STAMP) debian-packages
	$(VENV)/bin/neuroedge simulate --force
	@echo '$(NEXT_HINT)'

# -rs: each skipped test says why (missing Fashion-MNIST: with the apt-get line); the hint
# comes last whether the tests pass or not; make still fails when they fail
test: $(STAMP) debian-packages
	$(VENV)/bin/python -m pytest -q -rs; status=$$?; echo '$(NEXT_HINT)'; exit $$status

# exit 5 = no test carries the slow marker: not a failure
test-slow: $(STAMP) debian-packages
	$(VENV)/bin/python -m pytest -q -rs -m slow || test $$? -eq 5

# the rules and paths are pyproject.toml's [tool.ruff]
lint: $(STAMP)
	$(VENV)/bin/ruff check .

clean:
	rm -rf $(VENV) build *.egg-info
