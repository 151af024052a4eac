# Core fuzz targets (libFuzzer + ASan + UBSan): the sampler on any input,
# the example server's request JSON parser, the llama2.c file loaders,
# mysample_cuda.h's disk-cache reader, symbol scan and options split, the
# token lines `mysample stream` reads, the sampling commands' list flags.
#   make fuzz-core          build them
#   make fuzz-core-run      run them all at once for FUZZ_CORE_SECONDS (default 30)
FUZZ_CORE_SECONDS ?= 30
CORE_FUZZ := $(BUILD)/fuzz/fuzz_sampler $(BUILD)/fuzz/fuzz_request_json $(BUILD)/fuzz/fuzz_llama2 $(BUILD)/fuzz/fuzz_cuda_cache \
             $(BUILD)/fuzz/fuzz_stream_line $(BUILD)/fuzz/fuzz_cli_lists

.PHONY: fuzz-core fuzz-core-run
fuzz-core: $(CORE_FUZZ)

$(BUILD)/fuzz/fuzz_sampler: tests/fuzz/fuzz_sampler.c tests/fuzz/fuzz_params.h mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -lpthread

$(BUILD)/fuzz/fuzz_request_json: tests/fuzz/fuzz_request_json.c examples/json.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iexamples -o $@ $< -lm

$(BUILD)/fuzz/fuzz_llama2: tests/fuzz/fuzz_llama2.c examples/llama2.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Iexamples -o $@ $< -lm

$(BUILD)/fuzz/fuzz_stream_line: tests/fuzz/fuzz_stream_line.c tools/cli_stream.c tools/cli.h mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Itools -o $@ $< -lm -lpthread

$(BUILD)/fuzz/fuzz_cli_lists: tests/fuzz/fuzz_cli_lists.c tools/cli_sampling.c tools/cli.h mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -Itools -o $@ $< -lm -lpthread

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

# The GPU path on the CPU emulator against the CPU sampler (needs NVRTC and
# a C++ compiler): the emulator built by the fuzzer's compiler with its
# sanitizers, so that the kernels' memory accesses are checked too (less
# the C++-only checks, function and vptr, whose runtime a C program lacks).
#   make fuzz-cuda          build them
#   make fuzz-cuda-run      run for FUZZ_CUDA_SECONDS (default 60)
FUZZ_CXX ?= clang++
FUZZ_CUDA_SECONDS ?= 60
.PHONY: fuzz-cuda fuzz-cuda-run
fuzz-cuda: $(BUILD)/fuzz/fuzz_cuda_sample $(EMU_DIR)/libcuda_emu_fuzz.so

$(BUILD)/fuzz/fuzz_cuda_sample: tests/fuzz/fuzz_cuda_sample.c tests/fuzz/fuzz_params.h mysample_cuda.h mysample.h
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ $< -lm -lpthread -ldl

$(EMU_DIR)/libcuda_emu_fuzz.so: $(EMU_DEPS)
	$(FUZZ_CXX) -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize=function,vptr -fno-sanitize-recover=undefined $(EMU_FLAGS) \
	  -o $@ $(EMU_SRCS) -lpthread -Wl,--version-script=tests/cuda_emu/exports.map

fuzz-cuda-run: fuzz-cuda
	@mkdir -p $(BUILD)/fuzz/corpus-fuzz_cuda_sample
	MYSAMPLE_CUDA_DRIVER_PATH=$(EMU_DIR)/libcuda_emu_fuzz.so MYSAMPLE_CUDA_CACHE=$(BUILD)/fuzz/cuda-cache \
	  $(BUILD)/fuzz/fuzz_cuda_sample -max_total_time=$(FUZZ_CUDA_SECONDS) -timeout=60 -max_len=8192 \
	  -artifact_prefix=$(BUILD)/fuzz/ -print_final_stats=1 $(BUILD)/fuzz/corpus-fuzz_cuda_sample tests/fuzz/seeds/fuzz_cuda_sample
