# Backstage — quick start: `make demo`, `make test`.
SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)

.PHONY: deps build demo test soak bench bench-check bench-thresholds perf clean

deps:
	@./scripts/install-deps

build: deps
	$(SWIFT) build

demo: build
	$(SWIFT) run --skip-build backstage demo

# The whole suite, small sizes and a few crash points; stays within ~10 minutes cold.
test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build

# The big matrices: larger stores and every crash point of both strategies, repeated.
soak: deps
	$(SWIFT) build --build-tests
	BACKSTAGE_SOAK=1 $(SWIFT) test --skip-build

# The benchmark suites (Benchmarks/, a package of its own): time, throughput, memory, mallocs, disk.
# The first run builds package-benchmark in release mode (a few minutes).
bench: deps
	cd Benchmarks && $(SWIFT) package benchmark

# Fails when a suite regresses past the tolerances of its code against the committed Thresholds/.
bench-check: deps
	SWIFT=$(SWIFT) ./scripts/bench-check

# Records this machine's figures as the new thresholds (commit Benchmarks/Thresholds/ afterwards).
bench-thresholds: deps
	cd Benchmarks && $(SWIFT) package --allow-writing-to-package-directory benchmark thresholds update

# The ratio table and chart of README "Performance": Backstage against its baselines, release build.
perf: deps
	$(SWIFT) build -c release --product backstage
	$$($(SWIFT) build -c release --show-bin-path)/backstage bench --sizes 10MB,100MB,600MB --svg perf.svg --json perf.json --markdown

clean:
	rm -rf .build
