// F54 (FINDINGS.md): ggml_flash_attn_ext on the CPU with a logit softcap, no mask (NULL)
// and 64 or more queries (the tiled path) gives the padding of the last, partial KV tile
// the score −softcap instead of −INFINITY: the padding joins the softmax's denominator.
// The tile code sets the padded scores to −INFINITY before softcap's tanh, and
// tanh(−inf)·cap = −cap; a mask adds −INFINITY there again, so only a NULL mask shows it.
// Upstream: llama.cpp PR #29034 (open), which moves the padding after the softcap.
// Standalone: cc f54_softcap_padding_no_mask.c -lggml -lggml-base -lggml-cpu -lm
// Exit 0: the defect shows; 1: it no longer reproduces; 2: a ggml call failed.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

// Q = K = 0 (every score 0), the last key's values 1 and every other value 0: the exact
// output is 1 / keys for any softcap. (Past the first tile the padded rows of the V tile
// still hold the previous tile's values, 0 here, so the padding only adds to the divisor.)
static float Output(int queries, int keys, float softcap, int with_mask) {
  const int d = 64;
  struct ggml_init_params params = {(size_t)(queries + keys) * keys * 16 + (64u << 20), NULL, false};
  struct ggml_context* ctx = ggml_init(params);
  if (ctx == NULL) return NAN;
  struct ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, queries, 1, 1);
  struct ggml_tensor* k = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, keys, 1, 1);
  struct ggml_tensor* v = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, keys, 1, 1);
  struct ggml_tensor* mask = NULL;
  memset(q->data, 0, ggml_nbytes(q));
  memset(k->data, 0, ggml_nbytes(k));
  for (int i = 0; i < d * keys; ++i) ((float*)v->data)[i] = i / d == keys - 1 ? 1.0f : 0.0f;
  if (with_mask) {
    mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, keys, queries, 1, 1);
    memset(mask->data, 0, ggml_nbytes(mask));  // every key visible: the same attention as NULL
  }
  struct ggml_tensor* out = ggml_flash_attn_ext(ctx, q, k, v, mask, 0.125f, 0.0f, softcap);
  ggml_prec_set_acc(out, GGML_PREC_F32);
  struct ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  float result = NAN;
  if (ggml_graph_compute_with_ctx(ctx, graph, 1) == GGML_STATUS_SUCCESS) result = ((float*)out->data)[0];
  ggml_free(ctx);
  return result;
}

int main(void) {
  ggml_cpu_init();
  printf("ggml %s (commit %s)\n", ggml_version(), ggml_commit());
  printf("flash_attn_ext, D = 64, K/V F32, one thread; every score 0, the last key's values 1, "
         "the others' 0 (exact output: 1/keys)\n");
  const struct { int queries, keys; float softcap; } runs[] = {
      {64, 1, 1.0f}, {64, 65, 1.0f}, {64, 65, 30.0f}, {64, 64, 1.0f}, {63, 65, 1.0f}, {64, 65, 0.0f},
  };
  int wrong = 0;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; ++i) {
    const float masked = Output(runs[i].queries, runs[i].keys, runs[i].softcap, 1);
    const float unmasked = Output(runs[i].queries, runs[i].keys, runs[i].softcap, 0);
    if (isnan(masked) || isnan(unmasked)) {
      fprintf(stderr, "ggml compute failed\n");
      return 2;
    }
    const float exact = 1.0f / runs[i].keys;
    const int bad = fabsf(unmasked - exact) > 1e-5f * exact;
    wrong += bad;
    printf("  %2d queries, %2d keys, softcap %4g: exact %g, zero mask %.6g, NULL mask %.6g%s\n", runs[i].queries,
           runs[i].keys, runs[i].softcap, exact, masked, unmasked, bad ? "   <- padding weighted e^(-softcap)" : "");
  }
  if (wrong == 0) {
    printf("F54 no longer reproduces: every NULL-mask output is exact\n");
    return 1;
  }
  printf("F54 reproduces: %d NULL-mask outputs wrong (64+ queries, softcap on, keys not a multiple of 64)\n",
         wrong);
  return 0;
}
