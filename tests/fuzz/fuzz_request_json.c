/* libFuzzer target for the example server's request parser
   (examples/json.h): any bytes parse or are refused with a message,
   never crash; a parsed document's tree is consistent. */
#include "json.h"
#include <stdlib.h>

static void walk(const js_doc *d, const js_val *v, int depth) {
  int32_t i, n = 0, c;
  if (depth > JS_MAX_DEPTH + 1) abort();
  if (v->type == JS_STRING && v->len > 0 && !v->str) abort();
  if (v->type != JS_ARRAY && v->type != JS_OBJECT) return;
  for (c = v->first; c >= 0; c = d->v[c].next) {
    if (c >= d->n) abort();
    if (v->type == JS_OBJECT && !d->v[c].key) abort();
    walk(d, &d->v[c], depth + 1);
    n++;
  }
  if (n != v->n) abort();
  for (i = 0; i < v->n; i++) if (v->type == JS_ARRAY && !js_at(d, v, i)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  js_doc d;
  char err[128];
  memset(&d, 0, sizeof d);
  err[0] = '\0';
  if (js_parse(&d, (const char *)data, size, err, sizeof err) == 0) {
    const js_val *root = js_root(&d);
    if (!root) abort();
    walk(&d, root, 0);
    (void)js_get(&d, root, "messages");
  } else if (!err[0]) abort();
  js_free(&d);
  return 0;
}
