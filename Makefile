# Backstage — quick start: `make demo`, `make test`.
SWIFT ?= swift
export PATH := /opt/swift/usr/bin:$(PATH)

.PHONY: deps build demo test soak clean

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

clean:
	rm -rf .build
