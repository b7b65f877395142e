// F10 (FINDINGS.md): ggml_flash_attn_ext on the CPU with F16 K/V and fewer than 64
// queries accumulates V·e^(s − M) in an F16 buffer, although llama.cpp sets
// GGML_PREC_F32 on the node ("requires accumulation of the results in F32", ggml.h).
// Standalone: cc f10_f16_value_accumulator.c -lggml -lggml-base -lggml-cpu -lm
// Exit 0: the defect shows; 1: it no longer reproduces; 2: a ggml call failed.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ggml-cpu.h"
#include "ggml.h"

// Every score equal (Q = K = 0) and every value v: the exact output is v.
static float EqualScores(int queries, int keys, float v, int threads) {
  const int d = 64;
  struct ggml_init_params params = {(size_t)keys * d * 8 + (64u << 20), NULL, false};
  struct ggml_context* ctx = ggml_init(params);
  if (ctx == NULL) return NAN;
  struct ggml_tensor* q = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, d, queries, 1, 1);
  struct ggml_tensor* k = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, d, keys, 1, 1);
  struct ggml_tensor* val = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, d, keys, 1, 1);
  struct ggml_tensor* mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, keys, queries, 1, 1);
  memset(q->data, 0, ggml_nbytes(q));
  memset(k->data, 0, ggml_nbytes(k));
  memset(mask->data, 0, ggml_nbytes(mask));  // every key visible
  ggml_fp16_t* vd = (ggml_fp16_t*)val->data;
  for (int i = 0; i < d * keys; ++i) vd[i] = ggml_fp32_to_fp16(v);
  struct ggml_tensor* out = ggml_flash_attn_ext(ctx, q, k, val, mask, 0.125f, 0.0f, 0.0f);
  ggml_prec_set_acc(out, GGML_PREC_F32);  // as llama.cpp's build_attn_mha does
  struct ggml_cgraph* graph = ggml_new_graph(ctx);
  ggml_build_forward_expand(graph, out);
  float result = NAN;
  if (ggml_graph_compute_with_ctx(ctx, graph, threads) == GGML_STATUS_SUCCESS) result = ((float*)out->data)[0];
  ggml_free(ctx);
  return result;
}

int main(void) {
  ggml_cpu_init();
  printf("ggml %s (commit %s), CPU backend: AVX2 %d, F16C %d, FMA %d\n", ggml_version(), ggml_commit(),
         ggml_cpu_has_avx2(), ggml_cpu_has_f16c(), ggml_cpu_has_fma());
  printf("flash_attn_ext, D = 64, K/V F16, every score equal, every value v (exact output: v), "
         "GGML_PREC_F32 set on the node\n");
  int wrong = 0;
  const struct { int queries, keys, threads; float v; } runs[] = {
      {1, 1024, 1, 64.0f}, {1, 4096, 1, 16.0f}, {1, 1024, 4, 64.0f},
      {1, 4096, 4, 64.0f}, {64, 1024, 1, 64.0f}, {64, 4096, 4, 64.0f},
  };
  int one_query_runs = 0;
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; ++i) {
    const float got = EqualScores(runs[i].queries, runs[i].keys, runs[i].v, runs[i].threads);
    if (isnan(got)) {
      fprintf(stderr, "ggml compute failed\n");
      return 2;
    }
    const int bad = got != runs[i].v;
    if (runs[i].queries < 64) ++one_query_runs, wrong += bad;
    printf("  %2d quer%s, %5d keys, %d thread%s: out = %g, exact %g%s\n", runs[i].queries,
           runs[i].queries == 1 ? "y" : "ies", runs[i].keys, runs[i].threads, runs[i].threads == 1 ? " " : "s",
           got, runs[i].v, bad ? "   <- F16 accumulator" : "");
  }
  if (wrong == 0) {
    printf("F10 no longer reproduces: the one-chunk path returned every exact value\n");
    return 1;
  }
  printf("F10 reproduces: %d of %d one-query results wrong (64 queries take the tiled F32 path)\n", wrong,
         one_query_runs);
  return 0;
}
