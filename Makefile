# Backstage — quick start: `make demo`, `make test`.
SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)

# The release `backstage` links the Swift runtime and Foundation statically: a process starts in
# about 10 ms of CPU instead of 17 and 6 MB smaller (no 30 shared libraries to map and relocate),
# which every command pays and the bench's ratios at small sizes feel.
# It links libarchive statically too (BACKSTAGE_STATIC_LIBARCHIVE, Package.swift): its shared
# library would load libxml2 and ICU, 30-40 ms of every command's start from a cold cache.
RELEASE = -c release --static-swift-stdlib
RELEASE_BUILD = BACKSTAGE_STATIC_LIBARCHIVE=1 $(SWIFT) build $(RELEASE)

.PHONY: deps build demo test lint docs soak bench bench-check bench-thresholds perf perf-large man install clean

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

# The house format (.swift-format: 4 spaces, 120 columns), checked on the library and CLI sources;
# `swift format format -i -r Sources Package.swift` applies it. Then the layering of
# Sources/Backstage (docs/architecture.md): no folder uses one above it, no C module is imported
# outside its owner.
lint:
	$(SWIFT) format lint --strict -r Sources Package.swift
	./scripts/layers --quiet

# The DocC catalogs of the three libraries, any warning (a broken symbol link, an unknown article)
# fails. Output: .build/docs/<Target>. Backstage re-exports its layers (BackstageSystem,
# BackstageModel, BackstageEngine), whose symbols swift-docc-plugin's symbol-graph extraction leaves
# out (swift-docc-plugin#113): its symbol graph is the compiler's own, emitted while building (in
# .build-docs, so the usual build is not invalidated), which has them, and the toolchain's docc
# converts it with the catalog. The other two go through swift-docc-plugin.
DOC_TARGETS = BackstageExport BackstageHarness
DOC_GRAPHS = $(CURDIR)/.build-docs/symbol-graphs
docs: deps
	@mkdir -p .build/docs
	@# The graphs in all/ are kept: an up-to-date build emits none again.
	@rm -rf $(DOC_GRAPHS)/Backstage && mkdir -p $(DOC_GRAPHS)/all $(DOC_GRAPHS)/Backstage
	@echo "docs: Backstage"
	$(SWIFT) build --target Backstage --build-path .build-docs \
		-Xswiftc -emit-symbol-graph -Xswiftc -emit-symbol-graph-dir -Xswiftc $(DOC_GRAPHS)/all
	cp $(DOC_GRAPHS)/all/Backstage.symbols.json $(DOC_GRAPHS)/Backstage/
	for graph in $(DOC_GRAPHS)/all/Backstage@*.symbols.json; do [ ! -e "$$graph" ] || cp "$$graph" $(DOC_GRAPHS)/Backstage/; done
	docc convert Sources/Backstage/Backstage.docc --additional-symbol-graph-dir $(DOC_GRAPHS)/Backstage \
		--fallback-display-name Backstage --fallback-bundle-identifier Backstage \
		--output-path .build/docs/Backstage --warnings-as-errors
	@for target in $(DOC_TARGETS); do \
		echo "docs: $$target"; \
		$(SWIFT) package --allow-writing-to-directory .build/docs generate-documentation --target $$target \
			--warnings-as-errors --output-path .build/docs/$$target --disable-indexing || exit 1; \
	done

# The big matrices: larger stores and every crash point of both strategies, repeated. Only the
# suites of the test files that read BACKSTAGE_SOAK: every other test does the same work as in
# `make test` (run serially, they took 671 s of a 3,798 s soak on 2 shared cores). A release build
# of the tests (their own scratch path, so neither `make test`'s debug build nor the release
# products are rebuilt), with the fault injection some of these suites use (debug builds have it
# by default): the children run optimized, about twice as fast as debug ones (the shipped build
# also links the runtime statically and has no fault injection), and the fixtures and digests far faster. The suites run side by side (the whole suite once starved its
# time limits that way; these suites have none). From a fresh clone: the tests 321 s, the cold
# release build 385 s before them; 322 s once built (the serial debug soak took 1,853 s, its
# build included).
SOAK_SUITES = $(shell grep -rl BACKSTAGE_SOAK Tests | xargs sed -n 's/^@Suite[^s]*struct \([A-Za-z0-9_]*\).*/\1/p' | sort -u | paste -sd'|')
SOAK_BUILD = -c release --scratch-path .build-soak -Xswiftc -DBACKSTAGE_FAULT_INJECTION
soak: deps
	$(SWIFT) build $(SOAK_BUILD) --build-tests
	BACKSTAGE_SOAK=1 $(SWIFT) test $(SOAK_BUILD) --skip-build --filter '\.($(SOAK_SUITES))/'

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

# The targets of docs/performance.md: Backstage against its baselines, side by side, warm and cold
# (cold takes root: drop_caches), PERF_RUNS runs, release build (bench refuses a debug one). Writes
# docs/perf.svg, docs/perf.json and the Markdown table to docs/perf.md. About 15 minutes on
# 2 cores; for a quick try: make perf PERF_SIZES=10MB PERF_MIGRATION_SIZE=10MB PERF_RUNS=1.
PERF_SIZES ?= 10MB,200MB
PERF_MIGRATION_SIZE ?= 1GB
PERF_RUNS ?= 3
PERF_SCHEMAS ?= $(wildcard ../shared/schemas/*.sql)
perf: deps
	@$(if $(PERF_SCHEMAS),true,echo "make perf: no schema in ../shared/schemas/ (PERF_SCHEMAS is empty): generation is timed for the bundled Notes catalog only" >&2)
	$(RELEASE_BUILD) --product backstage
	$$($(RELEASE_BUILD) --show-bin-path)/backstage bench --sizes $(PERF_SIZES) \
		--migration-size $(PERF_MIGRATION_SIZE) --runs $(PERF_RUNS) \
		$(foreach schema,$(PERF_SCHEMAS),--generate-schema $(schema)) \
		--svg docs/perf.svg --json docs/perf.json --markdown > docs/perf.md
	@cat docs/perf.md

# Cost against scale (docs/performance.md), release build: Documents trees of PERF_LARGE_FILES small files,
# flat and deep, through audit, relocation's scan, export and import (time per file, peak RSS), and a store
# of PERF_LARGE_GB GB through relocate, split and migrate. Trees and store are kept in PERF_LARGE_DIR between
# runs (1,000,000 files take ~5 GB of disk, the store 3× its size). The store's operations run PERF_LARGE_RUNS
# times beside their baselines (the spread of their ratios); the trees once per cache. PERF_LARGE_GB=1 for a quick try.
PERF_LARGE_GB ?= 10
PERF_LARGE_RUNS ?= 3
PERF_LARGE_FILES ?= 10000,100000,1000000
PERF_LARGE_DIR ?= /var/tmp/backstage-perf-large
perf-large: deps
	$(RELEASE_BUILD) --product backstage
	$$($(RELEASE_BUILD) --show-bin-path)/backstage bench --files $(PERF_LARGE_FILES) \
		--store-size $(PERF_LARGE_GB)GB --runs $(PERF_LARGE_RUNS) --workspace $(PERF_LARGE_DIR) --json perf-large.json

# backstage(1), in mdoc, written by scripts/manual from the release `backstage`'s command tree
# (its help text, with EXIT STATUS and ENVIRONMENT): .build/backstage.1. Read it with `man -l`.
man: deps
	$(RELEASE_BUILD) --product backstage
	$(RELEASE_BUILD) --product backstage-simulate-child
	./scripts/manual "$$($(RELEASE_BUILD) --show-bin-path)/backstage" .build/backstage.1

# The release `backstage`, its man page (make man) and shell completions (swift-argument-parser's),
# and `backstage-simulate-child` beside it (the child `simulate --power-loss` runs).
# The resource bundles SwiftPM builds beside it go beside it too, where Bundle.module looks for them:
# the harness's holds the bundled Notes catalog, every command's default (a target given resources in
# Package.swift adds its bundle here; the dependencies' bundles are never read at run time).
PREFIX ?= /usr/local
RESOURCE_BUNDLES = Backstage_BackstageHarness.resources
install: man
	install -d "$(DESTDIR)$(PREFIX)/bin" "$(DESTDIR)$(PREFIX)/share/man/man1" \
		"$(DESTDIR)$(PREFIX)/share/bash-completion/completions" "$(DESTDIR)$(PREFIX)/share/zsh/site-functions" \
		"$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d"
	bindir="$$($(RELEASE_BUILD) --show-bin-path)"; bin="$$bindir/backstage"; \
	install -m 755 "$$bin" "$(DESTDIR)$(PREFIX)/bin/backstage" && \
	install -m 755 "$$bindir/backstage-simulate-child" "$(DESTDIR)$(PREFIX)/bin/backstage-simulate-child" && \
	for bundle in $(RESOURCE_BUNDLES); do \
		rm -rf "$(DESTDIR)$(PREFIX)/bin/$$bundle" && \
		cp -R "$$bindir/$$bundle" "$(DESTDIR)$(PREFIX)/bin/" && \
		chmod -R u=rwX,go=rX "$(DESTDIR)$(PREFIX)/bin/$$bundle" || exit 1; \
	done && \
	"$$bin" --generate-completion-script bash > "$(DESTDIR)$(PREFIX)/share/bash-completion/completions/backstage" && \
	"$$bin" --generate-completion-script zsh > "$(DESTDIR)$(PREFIX)/share/zsh/site-functions/_backstage" && \
	"$$bin" --generate-completion-script fish > "$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/backstage.fish"
	install -m 644 .build/backstage.1 "$(DESTDIR)$(PREFIX)/share/man/man1/backstage.1"

clean:
	rm -rf .build .build-soak
