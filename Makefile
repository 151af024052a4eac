# mysample: `make` builds the command-line tool and the examples,
# `make test` builds and runs the whole suite (needs only a C compiler).
CC      ?= cc
CFLAGS  ?= -O2
WARN    := -std=c99 -Wall -Wextra -Wpedantic -Werror
LDLIBS  := -lm -lpthread -ldl
BUILD   := build

SRC_PARTS  := $(wildcard src/*.h src/*.c src/*.inc src/*.txt src/cuda/*)
TOOL_SRCS  := $(wildcard tools/*.c)
TEST_SRCS  := $(wildcard tests/test_*.c)
TEST_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
# the tests that use only the public API link one build of the
# implementation (tests/impl.c); the others include it themselves
SHARED_IMPL_TESTS := $(patsubst %,$(BUILD)/tests/test_%,catalogue core golden json llamacpp llamacpp_ref metamorphic sampling score text)
EXAMPLE_SRCS := $(filter-out examples/server.c,$(wildcard examples/*.c))
EXAMPLE_BINS := $(patsubst examples/%.c,$(BUILD)/examples/%,$(EXAMPLE_SRCS))

.PHONY: all test shared-impl-tests headers check-amalgamation clean bench
# Each area adds its own targets in mk/*.mk (examples, fuzzing, CUDA).
all: headers $(BUILD)/mysample $(EXAMPLE_BINS)

headers: mysample.h
mysample.h: $(SRC_PARTS) amalgamate.sh
	./amalgamate.sh

$(BUILD)/mysample: $(TOOL_SRCS) mysample.h $(wildcard tools/*.h)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) $(WARN) -DMYSAMPLE_THREADS -I. -o $@ $(TOOL_SRCS) $(LDLIBS)

$(BUILD)/examples/%: examples/%.c mysample.h
	@mkdir -p $(BUILD)/examples
	$(CC) $(CFLAGS) $(WARN) -I. -o $@ $< $(LDLIBS)

$(BUILD)/tests/%: tests/%.c mysample.h tests/testlib.h tests/chi2.h tools/naive.h tools/naive_llamacpp.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(WARN) -DMYSAMPLE_THREADS -I. -Itests -o $@ $< $(LDLIBS)

$(BUILD)/tests/impl.o: tests/impl.c mysample.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(WARN) -DMYSAMPLE_THREADS -I. -c -o $@ $<

$(SHARED_IMPL_TESTS): $(BUILD)/tests/%: tests/%.c $(BUILD)/tests/impl.o mysample.h tests/testlib.h tests/chi2.h tools/naive.h tools/naive_llamacpp.h
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) $(TEST_CFLAGS) $(WARN) -DMYSAMPLE_THREADS -I. -Itests -o $@ $< $(BUILD)/tests/impl.o $(LDLIBS)

# for tests/sanitize.sh, which links them the same way
shared-impl-tests:
	@echo $(notdir $(SHARED_IMPL_TESTS))

test: all $(TEST_BINS)
	@tests/run.sh

bench: $(BUILD)/mysample
	$(BUILD)/mysample bench --json

check-amalgamation:
	./amalgamate.sh --check

clean:
	rm -rf $(BUILD)

-include $(wildcard mk/*.mk)
