# Egress (text assembly + JSON/SSE writer) extras: libFuzzer targets.
#   make fuzz-egress          build build/fuzz/fuzz_text and build/fuzz/fuzz_json
#   make fuzz-egress-run      run each for FUZZ_SECONDS (default 30)
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
	  mkdir -p $(BUILD)/fuzz/corpus-$$(basename $$f); \
	  echo "== $$f for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -artifact_prefix=$(BUILD)/fuzz/ -print_final_stats=1 $(BUILD)/fuzz/corpus-$$(basename $$f) > $(BUILD)/fuzz/$$(basename $$f).log 2>&1; rc=$$?; \
	  grep -vE '^#[0-9]+' $(BUILD)/fuzz/$$(basename $$f).log | tail -40; \
	  [ $$rc -eq 0 ] || exit 1; \
	done
