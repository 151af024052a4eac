# examples: the OpenAI-compatible demo server, its embedded corpus, `make demo`.
#   make server   build/examples/server (C99 + POSIX; embeds examples/data/corpus.txt)
#   make demo     builds it, starts it on a free loopback port, streams one chat
#                 completion to the terminal, stops it (needs curl or python3)
.PHONY: server demo
SERVER_HDRS := examples/ngram.h examples/llama2.h examples/json.h

# The training text as a C byte array (od is POSIX: no xxd needed).
$(BUILD)/examples/corpus.inc: examples/data/corpus.txt
	@mkdir -p $(BUILD)/examples
	@{ echo '/* generated from examples/data/corpus.txt by mk/examples.mk */'; \
	  echo 'static const unsigned char embedded_corpus[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; } > $@.tmp && mv $@.tmp $@

$(BUILD)/examples/server: examples/server.c mysample.h mysample_cuda.h $(SERVER_HDRS) $(BUILD)/examples/corpus.inc
	@mkdir -p $(BUILD)/examples
	$(CC) $(CFLAGS) $(WARN) -I. -Iexamples -I$(BUILD)/examples -DMS_EMBEDDED_CORPUS -o $@ examples/server.c -lm -lpthread -ldl

server: $(BUILD)/examples/server
all: $(BUILD)/examples/server

demo: $(BUILD)/examples/server
	@sh examples/demo.sh $(BUILD)/examples/server

# the model tests include the example headers
$(BUILD)/tests/test_model_ngram: examples/ngram.h examples/data/corpus.txt
$(BUILD)/tests/test_model_llama2: examples/llama2.h
