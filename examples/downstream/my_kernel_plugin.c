/* The downstream project's kernel: float32 attention with a bool mask
 * (1 = may attend), GQA, rows with no visible key → 0. It owns no positional
 * stage: attncheck applies RoPE to q and k before calling it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "attncheck/adapter.h"

static char error_text[256];

static const char* last_error(void* self) {
  (void)self;
  return error_text;
}

static float at(const attncheck_tensor* t, int64_t a, int64_t b, int64_t c, int64_t d) {
  return ((const float*)t->data)[a * t->strides[0] + b * t->strides[1] + c * t->strides[2] + d * t->strides[3]];
}

static int attention(void* self, const attncheck_attention_args* a) {
  const uint8_t* mask = a->mask.data;
  int32_t b, h, i, j, d;
  (void)self;
  if (a->mask_convention != ATTNCHECK_MASK_BOOL_VISIBLE || a->q.dtype != ATTNCHECK_DTYPE_F32) {
    snprintf(error_text, sizeof error_text, "only f32 with a bool-visible mask");
    return 1;
  }
  for (b = 0; b < a->batch; ++b)
    for (h = 0; h < a->q_heads; ++h)
      for (i = 0; i < a->tq; ++i) {
        const int32_t kv = h / (a->q_heads / a->kv_heads);
        float row_max = -INFINITY, sum = 0.0f;
        float* out = (float*)a->out.data + b * a->out.strides[0] + h * a->out.strides[1] + i * a->out.strides[2];
        for (d = 0; d < a->value_dim; ++d) out[d] = 0.0f;
        for (j = 0; j < a->tk; ++j) { /* pass 1: the row's largest visible score */
          float s = 0.0f;
          if (!mask[b * a->mask.strides[0] + i * a->mask.strides[1] + j * a->mask.strides[2]]) continue;
          for (d = 0; d < a->head_dim; ++d) s += at(&a->q, b, h, i, d) * at(&a->k, b, kv, j, d);
          s *= (float)a->scale;
          if (s > row_max) row_max = s;
        }
        if (row_max == -INFINITY) continue; /* no visible key: zeros */
        for (j = 0; j < a->tk; ++j) {       /* pass 2: softmax-weighted values */
          float s = 0.0f, w;
          if (!mask[b * a->mask.strides[0] + i * a->mask.strides[1] + j * a->mask.strides[2]]) continue;
          for (d = 0; d < a->head_dim; ++d) s += at(&a->q, b, h, i, d) * at(&a->k, b, kv, j, d);
          w = expf(s * (float)a->scale - row_max);
          sum += w;
          for (d = 0; d < a->value_dim; ++d) out[d] += w * at(&a->v, b, kv, j, d);
        }
        for (d = 0; d < a->value_dim; ++d) out[d] /= sum;
      }
  return 0;
}

#define BIT(n) (1u << (n))

static const attncheck_adapter_v1 table = {
    ATTNCHECK_ABI_VERSION,
    sizeof(attncheck_adapter_v1),
    "my-kernel",
    "the downstream project's float32 attention",
    {0, 0, 0, 0, /* owns_rope, owns_bias, has_rope_stage, has_session */
     BIT(ATTNCHECK_DTYPE_F32),
     BIT(ATTNCHECK_MASK_BOOL_VISIBLE), ATTNCHECK_MASK_BOOL_VISIBLE,
     ATTNCHECK_MASKED_ROWS_ZEROS,
     BIT(ATTNCHECK_ENCODING_NONE) | BIT(ATTNCHECK_ENCODING_ROPE),
     0, 0,    /* rope layouts and scalings: not ours (the harness rotates) */
     1, 0, 1, /* gqa, softcap, value_dim_differs */
     0, 0, 0, 0, 0},
    NULL, NULL, last_error, attention, NULL, NULL, NULL, NULL, NULL,
};

ATTNCHECK_PLUGIN_EXPORT const attncheck_adapter_v1* attncheck_adapter_entry(void) { return &table; }
