# planbridge — see README.md. `make demo` runs the scripted demo, `make test` the tests.
GO      ?= go
EMACS   ?= emacs
BIN     := bin/planbridge
ELISP   := $(wildcard elisp/planbridge*.el)
export PLANBRIDGE_PROGRAM := $(CURDIR)/$(BIN)

.PHONY: build test go-test elisp-test bench elisp-bench demo lint vet crash

build:
	$(GO) build -o $(BIN) ./cmd/planbridge

vet:
	$(GO) vet ./...
	@out=$$(gofmt -l . ); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

go-test: build
	$(GO) test -count=1 -timeout 30m ./...

elisp-test: build
	$(EMACS) -Q --batch -L elisp -l elisp/test/planbridge-test.el -f ert-run-tests-batch-and-exit

test: vet lint go-test elisp-test

lint:
	$(EMACS) -Q --batch -L elisp --eval '(setq byte-compile-error-on-warn t)' -f batch-byte-compile $(ELISP)
	$(EMACS) -Q --batch -L elisp -l elisp/test/lint.el $(ELISP)
	rm -f elisp/*.elc

bench: build
	$(GO) test -run '^$$' -bench . -benchmem -count=1 -timeout 30m ./... | tee bin/bench.txt
	$(GO) run ./internal/benchreport < bin/bench.txt
	$(MAKE) --no-print-directory elisp-bench

# The Emacs figures of issue 17 (render, reopen, keystroke), measured on
# byte-compiled files as a user runs them.
elisp-bench: build
	@d=$$(mktemp -d) && cp elisp/*.el "$$d" && \
	  $(EMACS) -Q --batch -L "$$d" -f batch-byte-compile "$$d"/*.el && \
	  $(EMACS) -Q --batch -L "$$d" -l elisp/test/bench.el 2>&1 | grep '^planbridge-bench:'; \
	  status=$$?; rm -rf "$$d"; exit $$status

# The random-kill test at length: `make crash N=300 SEED=7` (make test runs 30).
N    ?= 300
SEED ?= 14
crash:
	PLANBRIDGE_CRASH_TRIALS=$(N) PLANBRIDGE_CRASH_SEED=$(SEED) $(GO) test -count=1 -timeout 60m -run '^TestRandomKill$$' ./cmd/planbridge

demo: build
	./$(BIN) demo
