# The two commands a new user needs are `make demo` and `make test`.
GO        ?= go
BIN       := bin/bastion
FUZZTIME  ?= 10s

.PHONY: all build install demo test deps vet lint fuzz bench bench-review bench-gateway conformance conformance-serve conformance-gateway conformance-bastion-gateway clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/bastion

# install puts bastion on your PATH: go install writes it to $GOBIN, or
# $(go env GOPATH)/bin when GOBIN is unset (add that directory to PATH).
# -buildvcs=auto records the commit for `bastion --version` even where
# GOFLAGS turns stamping off (Go finds a clone's .git directory, not a
# worktree's .git file).
install:
	$(GO) install -buildvcs=auto ./cmd/bastion
	@dir="$$($(GO) env GOBIN)"; [ -n "$$dir" ] || dir="$$($(GO) env GOPATH | cut -d: -f1)/bin"; \
	  echo "installed $$dir/bastion"; \
	  case ":$$PATH:" in *":$$dir:"*) ;; *) echo "$$dir is not on your PATH: add it (e.g. export PATH=\"$$dir:\$$PATH\")";; esac

# deps installs what the real-part tests and the demo need (Chromium, fonts)
# when it can; without root it says what is missing and the tests skip loudly.
deps:
	@bash scripts/deps.sh

demo: deps build
	./$(BIN) demo

# The unit and integration tests run last so their summary closes the output.
test: deps vet
	@bash scripts/lint.sh
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(FUZZTIME)
	@bash -o pipefail -c 'bash scripts/conformance.sh --fixture | tail -4'
	@$(MAKE) --no-print-directory conformance-serve
	@$(MAKE) --no-print-directory conformance-gateway
	@$(MAKE) --no-print-directory conformance-bastion-gateway
	$(GO) test -count=1 -timeout 20m ./...

vet:
	$(GO) vet ./...

lint:
	@bash scripts/lint.sh

# fuzz runs every fuzz target briefly; longer runs: make fuzz FUZZTIME=60s
fuzz:
	@bash scripts/fuzz.sh $(FUZZTIME)

# conformance runs the official MCP conformance suite (from npm) against the
# fixture server behind bastion's edge, on both protocol revisions.
conformance:
	bash scripts/conformance.sh --fixture

# conformance-serve runs the same suite against `bastion serve` itself (the real
# design-review server); fixture-only scenarios are expected failures, listed in
# scripts/conformance-serve-expected-failures.txt.
conformance-serve:
	@bash -o pipefail -c 'bash scripts/conformance.sh --serve | grep -v "^XFAIL" | tail -3'

# conformance-gateway runs the suite through the governing gateway: `bastion
# serve --gateway` with the conformance fixture as its one upstream (Streamable
# HTTP on loopback). Every scored scenario the fixture passes directly must pass
# here too.
conformance-gateway:
	@bash -o pipefail -c 'bash scripts/conformance.sh --gateway | grep -v "^PASS" | tail -4'

# conformance-bastion-gateway runs it against the same gateway as `bastion
# gateway` serves it (the loopback edge without authentication, no Chromium):
# the results the gateway writes itself (denials) must be schema-valid there too.
conformance-bastion-gateway:
	@bash -o pipefail -c 'bash scripts/conformance.sh --bastion-gateway | grep -v "^PASS" | tail -4'

bench-review: deps
	$(GO) run ./bench/review

bench-gateway:
	$(GO) run ./bench/gateway

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf bin out
