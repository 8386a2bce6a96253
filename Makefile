# Developer shortcuts. CI runs .ci/run; these are for running by hand.

FUZZTIME ?= 30s

# Each fuzz target, as package:Target.
FUZZ_TARGETS = \
	.:FuzzIdempotencyKey \
	./registry:FuzzCanonicalize \
	./registry:FuzzParseManifest \
	./tools:FuzzNormalize \
	./httpapi:FuzzCallRequest \
	./httpapi:FuzzAuthorization

.PHONY: test fuzz
test:
	go test -race ./...

# Runs every fuzz target for FUZZTIME each (make fuzz FUZZTIME=5m).
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		go test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done
