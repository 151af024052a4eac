# Core fuzz targets (libFuzzer + ASan + UBSan): the sampler on any input,
# the example server's request JSON parser, the llama2.c file loaders,
# mysample_cuda.h's disk-cache reader, symbol scan and options split.
#   make fuzz-core          build them
#   make fuzz-core-run      run them all at once for FUZZ_CORE_SECONDS (default 30)
FUZZ_CORE_SECONDS ?= 30
CORE_FUZZ := $(BUILD)/fuzz/fuzz_sampler $(BUILD)/fuzz/fuzz_request_json $(BUILD)/fuzz/fuzz_llama2 $(BUILD)/fuzz/fuzz_cuda_cache

.PHONY: fuzz-core fuzz-core-run
fuzz-core: $(CORE_FUZZ)

$(BUILD)/fuzz/fuzz_sampler: tests/fuzz/fuzz_sampler.c mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -lpthread

$(BUILD)/fuzz/fuzz_request_json: tests/fuzz/fuzz_request_json.c examples/json.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iexamples -o $@ $< -lm

$(BUILD)/fuzz/fuzz_llama2: tests/fuzz/fuzz_llama2.c examples/llama2.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iexamples -o $@ $< -lm

$(BUILD)/fuzz/fuzz_cuda_cache: tests/fuzz/fuzz_cuda_cache.c mysample_cuda.h mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -lpthread -ldl

fuzz-core-run: $(CORE_FUZZ)
	@for f in $(CORE_FUZZ); do \
	  n=$$(basename $$f); mkdir -p $(BUILD)/fuzz/corpus-$$n; \
	  echo "== $$f for $(FUZZ_CORE_SECONDS) s"; \
	  seeds=; [ -d tests/fuzz/seeds/$$n ] && seeds=tests/fuzz/seeds/$$n; \
	  ( $$f -max_total_time=$(FUZZ_CORE_SECONDS) -timeout=20 -max_len=8192 -artifact_prefix=$(BUILD)/fuzz/ -print_final_stats=1 $(BUILD)/fuzz/corpus-$$n $$seeds > $(BUILD)/fuzz/$$n.log 2>&1; echo $$? > $(BUILD)/fuzz/$$n.rc ) & \
	done; wait; \
	rc=0; for f in $(CORE_FUZZ); do \
	  n=$$(basename $$f); grep -vE '^#[0-9]+' $(BUILD)/fuzz/$$n.log | tail -40; \
	  [ "$$(cat $(BUILD)/fuzz/$$n.rc)" = 0 ] || { echo "FAIL fuzz $$n (see $(BUILD)/fuzz/$$n.log)"; rc=1; }; \
	done; exit $$rc
