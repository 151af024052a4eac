# mysample_cuda.h: generated together with mysample.h by amalgamate.sh
# (SRC_PARTS covers src/cuda/*); what includes it depends on it too.
mysample_cuda.h: mysample.h tools/embed.sh ;
$(BUILD)/mysample: mysample_cuda.h
$(BUILD)/tests/test_cuda: mysample_cuda.h
$(BUILD)/examples/cuda_sample: mysample_cuda.h

.PHONY: cuda-check cuda-compile
# mysample_cuda.h alone as C99/C11 and C++11/17 with warnings as errors
# (gcc and clang where installed), and in two translation units with
# MYSAMPLE_STATIC. Needs no CUDA toolkit.
cuda-check: mysample_cuda.h
	@bash tests/ci/cuda.sh --headers-only

# Compiles every kernel with NVRTC for sm_80 and sm_90 (needs NVRTC, no GPU).
cuda-compile: $(BUILD)/mysample
	$(BUILD)/mysample cuda-compile

.PHONY: gpu-figures
# The GPU figures (needs a GPU, torch; FlashInfer optional): the markdown
# table for BENCHMARKS.md on stdout. Not part of `make test`.
gpu-figures:
	@bash tools/gpu_figures.sh

.PHONY: exp-monotone
# The exp's monotonicity over every negative float argument that the GPU's
# min_p threshold search relies on (about half a minute). Not part of
# `make test`.
exp-monotone: $(BUILD)/tools/exp_monotone
	$(BUILD)/tools/exp_monotone
$(BUILD)/tools/exp_monotone: tools/checks/exp_monotone.c mysample.h
	@mkdir -p $(dir $@)
	$(CC) -O2 -std=c99 -Wall -Wextra -Wpedantic -Werror -o $@ tools/checks/exp_monotone.c -lm
