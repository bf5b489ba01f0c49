# appstore-gateway: `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
VENV  := .venv
PY    := $(VENV)/bin/python
SWIFT_BUILD_FLAGS ?=
BIN_DEBUG   := .build/debug/appstore-gateway
BIN_RELEASE := .build/release/appstore-gateway
# LeakSanitizer's suppressions (make test-asan, make fuzz): see scripts/lsan.supp.
LSAN  := LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp
# Runs a test suite or fuzz target with TMPDIR a fresh directory, removed after it (KEEP_TEST_TMP=1 keeps it).
IN_TEMP := scripts/in-temp-dir.sh

.PHONY: soak all deps venv build release run test test-swift test-interop test-asan test-tsan fuzz gen check-gen bench format lint clean image

all: build

# System packages (apt, only the missing ones): deps-run what building and running need (make build, release,
# run), deps everything (make test, the test-* targets, gen, fuzz, bench). scripts/install-deps.sh lists both.
.PHONY: deps-run
deps-run:
	@scripts/install-deps.sh run

deps:
	@scripts/install-deps.sh

# The Python venv for the interop tests.
venv: $(VENV)/.installed
$(VENV)/.installed: Tests/interop/requirements.txt
	@python3 -m venv $(VENV)
	@$(VENV)/bin/pip install -q --disable-pip-version-check -r Tests/interop/requirements.txt
	@touch $@

build: deps-run
	swift build $(SWIFT_BUILD_FLAGS)

release: deps-run
	swift build -c release $(SWIFT_BUILD_FLAGS)

# Starts the gateway on its embedded default: the built-in App Store simulator, no Apple credentials.
RUN_ARGS ?= --simulator --state-dir .simulator
run: release
	$(BIN_RELEASE) serve $(RUN_ARGS)

# Every test: generated-code drift, Swift unit tests, then the black-box interop suite against the binary.
# Swift tests run one at a time: the in-process server tests need the cooperative pool's threads for their
# handlers, and CPU-bound suites (key generation, signing) running beside them on 2 cores starve it.
# Each suite writes its temporary files under a directory of its own, removed after it (scripts/in-temp-dir.sh).
test: deps venv check-gen check-contract build
	$(IN_TEMP) swift test --no-parallel $(SWIFT_BUILD_FLAGS) 2>&1 | tee .build/swift-test.log; test $${PIPESTATUS[0]} -eq 0
	GATEWAY_BIN=$(BIN_DEBUG) $(IN_TEMP) $(PY) -m pytest -q Tests/interop

# The Swift suites under AddressSanitizer / ThreadSanitizer, each in its own build directory; any leak or race
# report fails the target (the suppression files name third-party code only). The venv is for the suites that
# run Python clients.
test-asan: deps venv
	$(LSAN) $(IN_TEMP) swift test --no-parallel --sanitize=address \
	  --scratch-path .build-asan $(SWIFT_BUILD_FLAGS)

test-tsan: deps venv
	TSAN_OPTIONS=suppressions=$(CURDIR)/scripts/tsan.supp $(IN_TEMP) swift test --no-parallel --sanitize=thread \
	  --scratch-path .build-tsan $(SWIFT_BUILD_FLAGS)

# libFuzzer targets of fuzz/ (see fuzz/README.md): each runs FUZZ_SECONDS over its committed seed corpus.
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= fuzz-deframer fuzz-proto fuzz-jws fuzz-config fuzz-apple-error fuzz-bearer fuzz-ocsp \
  fuzz-verify-handler fuzz-history-handler fuzz-notifications-handler fuzz-api-handlers fuzz-webhook-handler \
  fuzz-http1 fuzz-redis-reply
fuzz: deps
	cd fuzz && swift build --scratch-path ../.build-fuzz --sanitize=fuzzer --sanitize=address \
	  -Xswiftc -sanitize=fuzzer,address \
	  -Xswiftc -parse-as-library
	@failed=""; for t in $(FUZZ_TARGETS); do \
	  name=$${t#fuzz-}; mkdir -p .build-fuzz/corpus/$$name; \
	  echo "== $$t ($(FUZZ_SECONDS) s)"; \
	  $(LSAN) $(IN_TEMP) .build-fuzz/debug/$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	    -artifact_prefix=.build-fuzz/crash-$$name- .build-fuzz/corpus/$$name fuzz/corpus/$$name \
	    || failed="$$failed $$t"; \
	done; test -z "$$failed" || { echo "fuzz targets that crashed:$$failed (inputs in .build-fuzz/)"; exit 1; }

gen: deps venv
	scripts/gen-protos.sh

# Fails when the committed generated code differs from a fresh generation.
check-gen: deps venv
	@scripts/check-gen.sh

# Fails when proto/ breaks the released gRPC contract (proto/contract/v1.descriptor.binpb): README "Compatibility".
.PHONY: check-contract freeze-contract
check-contract: deps venv
	@$(PY) scripts/contract.py check

# At a release only: the released proto/ becomes the baseline check-contract compares against.
freeze-contract: deps venv
	$(PY) scripts/contract.py freeze

bench: deps venv release
	bench/run-all.sh

# 10 minutes of mixed load with faults, RSS sampled every 10 s (SOAK_SECONDS to change); loopback only.
SOAK_SECONDS ?= 600
soak: deps venv release
	$(PY) bench/soak.py $(SOAK_SECONDS)

format:
	swift format --in-place --recursive Sources Tests Package.swift

lint:
	swift format lint --strict --recursive Sources Tests Package.swift
	@scripts/check-locks.sh
	@scripts/check-modules.py

# The container image (deploy/Dockerfile; the build context is the repository root).
image:
	docker build -f deploy/Dockerfile -t appstore-gateway:dev .

clean:
	rm -rf .build
