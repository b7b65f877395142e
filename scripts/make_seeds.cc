// Writes corpora/seeds/: hand-picked boundary cases for every law (issue
// "Fuzzing campaigns, shrinking, corpora"; DESIGN §3 lists the boundaries):
// tile edges (63/64/65/127/128/129 keys), Tq < Tk and Tq == Tk, decode steps of
// several tokens, windows and chunks around T, zero-length documents, positions
// past 2^16, rows with no visible key, GQA, partial rotary, every encoding and
// RoPE scaling. Each is a corpus entry (cases/corpus.h) expecting "pass" on every
// correct built-in adapter that supports it; tests/corpus_replay_test.cc replays
// them and the fuzz targets start from them.
//
//   cmake --build build --target make-seeds && build/make-seeds corpora/seeds
//
// The program is deterministic: rerunning it rewrites the same files.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "cases/case.h"
#include "cases/corpus.h"

namespace attncheck {
namespace {

struct Seed {
  std::string law;
  std::string note;
  Case c;
};

// One row of `tokens` real tokens in one document.
RowSpec Row(int tokens, int offset = 0) {
  RowSpec row;
  row.documents = {tokens};
  row.position_offset = offset;
  return row;
}

// B rows of Tk tokens, Tq queries, causal, D = Dv = 8, two heads.
Case Base(int key_len, int query_len, int batch = 1) {
  Case c;
  c.q_heads = 2;
  c.kv_heads = 2;
  c.head_dim = 8;
  c.value_dim = 8;
  c.query_len = query_len;
  for (int b = 0; b < batch; ++b) c.rows.push_back(Row(key_len));
  c.seed = 1;
  return c;
}

Case WithRope(Case c, RopeLayout layout = RopeLayout::kHalfSplit) {
  c.encoding.kind = EncodingKind::kRope;
  c.encoding.rope.layout = layout;
  return c;
}

std::vector<Seed> Seeds() {
  std::vector<Seed> seeds;
  // The case as written (additive −inf mask: reference, eigen) and, where the
  // tiled kernels can run it (no mask tensor but bool, encodings none and RoPE),
  // the same case with a bool-visible mask; `all_dtypes` adds f16 and bf16 copies
  // of that (tiled-f16, tiled-bf16).
  auto add = [&](std::string law, std::string note, Case c, bool all_dtypes = false) {
    const bool tiled = c.mask == MaskConvention::kAdditiveNegInf && c.dtype == Dtype::kF32 &&
                       (c.encoding.kind == EncodingKind::kNone || c.encoding.kind == EncodingKind::kRope);
    seeds.push_back({law, note, c});
    if (!tiled) return;
    c.mask = MaskConvention::kBoolVisible;
    seeds.push_back({law, note + " [bool-visible mask]", c});
    if (!all_dtypes) return;
    for (Dtype dtype : {Dtype::kF16, Dtype::kBf16}) {
      c.dtype = dtype;
      seeds.push_back({law, fmt::format("{} [{}, bool-visible mask]", note, Name(dtype)), c});
    }
  };

  // ---- non-interference: blocked keys must not influence any output ----
  for (int tk : {63, 64, 65, 127, 128, 129}) {
    add("non-interference", fmt::format("tile edge: Tk = {}, decode step of 3 queries (Tq < Tk)", tk), Base(tk, 3),
        true);
  }
  for (int tk : {63, 64, 65}) {
    add("non-interference", fmt::format("tile edge: Tk = Tq = {} prefill", tk), Base(tk, tk), true);
  }
  add("non-interference", "prefill across a 32-key tile edge", Base(33, 33), true);
  for (int w : {1, 8, 9, 10}) {
    Case c = Base(9, 9);
    c.visibility = VisibilityKind::kSlidingWindow;
    c.window = w;
    add("non-interference", fmt::format("sliding window W = {} around T = 9", w), c, w == 1);
  }
  for (int chunk : {1, 4, 9}) {
    Case c = Base(9, 5);
    c.visibility = VisibilityKind::kChunked;
    c.chunk = chunk;
    add("non-interference", fmt::format("chunked attention, chunk {} over T = 9, Tq = 5", chunk), c);
  }
  {
    Case c = Base(8, 8);
    c.visibility = VisibilityKind::kPrefixLm;
    c.rows[0].prefix_len = 3;
    add("non-interference", "prefix-LM, prefix of 3 in 8 tokens", c);
  }
  {
    Case c = Base(10, 10, 2);
    c.visibility = VisibilityKind::kBidirectional;
    c.rows[0] = {.left_pad = 2, .right_pad = 1, .documents = {7}};
    c.rows[1] = {.left_pad = 0, .right_pad = 3, .documents = {4, 0, 3}};
    add("non-interference", "bidirectional, left and right padding, a zero-length document", c);
  }
  {
    Case c = WithRope(Base(6, 2));
    c.rows[0].position_offset = 65536;
    add("non-interference", "RoPE at positions past 2^16", c);
  }

  // ---- left-padding: left pads change nothing for the real tokens ----
  {
    Case c = Base(7, 7, 2);
    c.rows[0] = {.left_pad = 3, .documents = {4}};
    add("left-padding", "batch of two, one row left-padded by 3", c);
  }
  {
    Case c = WithRope(Base(65, 2, 2));
    c.rows[1] = {.left_pad = 1, .documents = {64}};
    add("left-padding", "RoPE, left pad 1 crossing a 64-key tile", c);
  }
  {
    Case c = Base(5, 5, 2);
    c.q_heads = 4;
    c.kv_heads = 2;
    c.rows[0] = {.left_pad = 4, .documents = {1}};
    add("left-padding", "GQA 4/2, a row with a single real token after 4 pads", c);
  }

  // ---- packed-isolation: packed documents do not see each other ----
  {
    Case c = Base(9, 9);
    c.rows[0].documents = {3, 0, 4, 2};
    add("packed-isolation", "four documents, one of length 0", c);
  }
  {
    Case c = WithRope(Base(12, 12));
    c.rows[0] = {.left_pad = 1, .right_pad = 1, .documents = {5, 5}, .position_offset = 256};
    add("packed-isolation", "RoPE, padded row with two documents, positions from 256", c);
  }
  {
    Case c = Base(6, 6);
    c.rows[0].documents = {1, 1, 1, 1, 1, 1};
    add("packed-isolation", "six one-token documents (every query sees only itself)", c);
  }

  // ---- rope-relative: scores depend on i − j only ----
  for (RopeLayout layout : {RopeLayout::kHalfSplit, RopeLayout::kInterleaved}) {
    Case c = WithRope(Base(8, 8), layout);
    add("rope-relative", fmt::format("{} RoPE, full rotary", Name(layout)), c);
    c.head_dim = 12;
    c.value_dim = 12;
    c.encoding.rope.rotary_dim = 4;
    add("rope-relative", fmt::format("{} RoPE, partial rotary 4 of 12", Name(layout)), c, true);
  }
  for (RopeScaling scaling : kAllRopeScalings) {
    if (scaling == RopeScaling::kNone || scaling == RopeScaling::kDynamicNtk) continue;  // dynamic: absolute
    Case c = WithRope(Base(8, 8));
    c.head_dim = c.value_dim = 16;
    c.encoding.rope.scaling = scaling;
    c.encoding.rope.factor = 4.0;
    c.encoding.rope.original_context = 64;
    add("rope-relative", fmt::format("RoPE scaling {} (factor 4, L = 64)", Name(scaling)), c);
  }
  {
    Case c = WithRope(Base(4, 4));
    c.rows[0].position_offset = 65535;
    c.encoding.rope.base = 500000.0;
    add("rope-relative", "RoPE around 2^16 (positions 65535–65538), base 5e5", c);
  }

  // ---- decode-consistency: prefill + chunks equals one full prefill ----
  {
    Case c = WithRope(Base(9, 1));
    c.decode_chunks = {1, 1, 1};
    add("decode-consistency", "three one-token decode steps after a prefill of 6", c, true);
  }
  {
    Case c = WithRope(Base(10, 3, 2));
    c.decode_chunks = {3, 2, 5};
    add("decode-consistency", "chunks of 3, 2 and 5 tokens, no prefill (Σ chunks = Tk), batch 2", c);
  }
  {
    Case c = Base(66, 2);
    c.visibility = VisibilityKind::kSlidingWindow;
    c.window = 4;
    c.decode_chunks = {2};
    add("decode-consistency", "sliding window 4, decode step of 2 across the 64-key tile edge", c, true);
  }

  // ---- masked-rows: a query that sees no key gets the promised output ----
  {
    Case c = Base(4, 4);
    c.rows[0] = {.left_pad = 2, .documents = {2}};
    add("masked-rows", "queries on two left pads: rows with no visible key", c);
  }
  {
    Case c = Base(5, 5, 2);
    c.rows[0].documents = {2, 0, 3};
    c.rows[1] = {.left_pad = 0, .right_pad = 5, .documents = {0}};
    add("masked-rows", "a row of padding only beside a row with an empty document", c);
  }
  {
    Case c = Base(3, 3);
    c.rows[0] = {.right_pad = 2, .documents = {1}};
    c.mask = MaskConvention::kBoolVisible;
    add("masked-rows", "right-padded row, bool-visible mask", c);
  }

  // ---- reference-agreement: the kernel computes what the reference defines ----
  for (EncodingKind kind : kAllEncodingKinds) {
    Case c = Base(7, 5);
    c.encoding.kind = kind;
    add("reference-agreement", fmt::format("encoding {}", Name(kind)), c);
  }
  {
    Case c = Base(5, 5);
    c.head_dim = 7;
    c.value_dim = 3;
    add("reference-agreement", "odd head dim 7, value dim 3", c);
  }
  for (ValueProfile profile : kAllValueProfiles) {
    if (profile == ValueProfile::kNormal) continue;
    Case c = Base(17, 17);
    c.profile = profile;
    add("reference-agreement", fmt::format("value profile {} over 17 keys", Name(profile)), c);
  }
  {
    Case c = Base(6, 6);
    c.softcap = 1.0;
    c.scale = 1.0;
    add("reference-agreement", "softcap 1, scale 1", c);
  }
  add("reference-agreement", "RoPE, Tk = 129, Tq = 2", WithRope(Base(129, 2)), true);

  // ---- mask-conventions: every accepted convention gives the same output ----
  {
    Case c = Base(6, 6);
    add("mask-conventions", "plain causal prefill (every convention, causal flags included)", c);
  }
  {
    Case c = Base(6, 2);
    add("mask-conventions", "causal decode step Tq = 2 < Tk = 6 (bottom-right alignment)", c);
  }
  {
    Case c = Base(6, 6, 2);
    c.rows[0] = {.left_pad = 2, .documents = {4}};
    add("mask-conventions", "padded row (no causal flag can express it)", c);
  }

  // ---- gqa: grouped heads equal repeated kv heads ----
  {
    Case c = Base(5, 5);
    c.q_heads = 6;
    c.kv_heads = 2;
    add("gqa", "Hq = 6, Hkv = 2", c);
  }
  {
    Case c = WithRope(Base(4, 2));
    c.q_heads = 3;
    c.kv_heads = 1;
    add("gqa", "MQA: Hq = 3 (not a power of two), Hkv = 1, RoPE", c, true);
  }
  {
    Case c = Base(6, 6);
    c.q_heads = 4;
    c.kv_heads = 2;
    c.encoding.kind = EncodingKind::kAlibi;
    add("gqa", "Hq = 4, Hkv = 2, ALiBi (slopes per query head)", c);
  }
  return seeds;
}

}  // namespace
}  // namespace attncheck

int main(int argc, char** argv) {
  using namespace attncheck;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make-seeds DIR (e.g. corpora/seeds)\n");
    return 2;
  }
  const std::string dir = argv[1];
  int written = 0;
  for (const Seed& seed : Seeds()) {
    if (const std::optional<std::string> problem = Validate(seed.c)) {
      std::fprintf(stderr, "make-seeds: invalid seed '%s': %s\n", seed.note.c_str(), problem->c_str());
      return 1;
    }
    CorpusMeta meta;
    meta.law = seed.law;
    meta.expect = "pass";
    meta.note = seed.note;
    const std::filesystem::path sub = std::filesystem::path(dir) / seed.law;
    std::filesystem::create_directories(sub);
    WriteCorpusEntry(sub.string(), seed.c, meta);
    ++written;
  }
  fmt::print("{} seeds written under {}\n", written, dir);
  return 0;
}
