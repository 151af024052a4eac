# Egress (text assembly + JSON/SSE writer) extras: libFuzzer targets.
#   make fuzz-egress          build build/fuzz/fuzz_text and build/fuzz/fuzz_json
#   make fuzz-egress-run      run them all at once for FUZZ_SECONDS (default 30)
FUZZ_CC      ?= clang
FUZZ_FLAGS   := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -std=c99 -I. -Itests
FUZZ_SECONDS ?= 30
EGRESS_FUZZ  := $(BUILD)/fuzz/fuzz_text $(BUILD)/fuzz/fuzz_json

.PHONY: fuzz-egress fuzz-egress-run
fuzz-egress: $(EGRESS_FUZZ)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c mysample.h tests/json_check.h tests/egress_ref.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -lpthread

fuzz-egress-run: $(EGRESS_FUZZ)
	@for f in $(EGRESS_FUZZ); do \
	  n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$f for $(FUZZ_SECONDS) s"; \
	  ( $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=$(BUILD)/fuzz/ -print_final_stats=1 $(BUILD)/fuzz/corpus-$$n > $(BUILD)/fuzz/$$n.log 2>&1; echo $$? > $(BUILD)/fuzz/$$n.rc ) & \
	done; wait; \
	rc=0; for f in $(EGRESS_FUZZ); do \
	  n=$$(basename $$f); grep -vE '^#[0-9]+' $(BUILD)/fuzz/$$n.log | tail -40; \
	  [ "$$(cat $(BUILD)/fuzz/$$n.rc)" = 0 ] || { echo "FAIL fuzz $$n (see $(BUILD)/fuzz/$$n.log)"; rc=1; }; \
	done; exit $$rc
