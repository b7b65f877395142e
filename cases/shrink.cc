// The domain shrinker (DESIGN §7). Passes run in a fixed order, each trying its
// candidates smallest first and starting over from the new case whenever one is
// kept; the round repeats until no pass keeps anything (a fixpoint) or a limit
// stops it. Candidates that fail Validate are skipped without a predicate call,
// and no case is tried twice, so the search cannot cycle.
#include "cases/shrink.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>

namespace attncheck {
namespace {

using Clock = std::chrono::steady_clock;

struct Candidate {
  std::string change;  // what it changes, for ShrinkResult::changes
  Case c;
};
using Candidates = std::vector<Candidate>;

// Values below x, smallest first: lo, then x − (x−lo)/2, x − (x−lo)/4, …, x − 1
// (the classic halving ladder: a big jump first, then ever smaller steps).
std::vector<int> Towards(int x, int lo) {
  std::vector<int> values;
  if (x <= lo) return values;
  values.push_back(lo);
  for (int64_t step = (static_cast<int64_t>(x) - lo) / 2; step >= 1; step /= 2) {
    const int v = static_cast<int>(x - step);
    if (v > values.back()) values.push_back(v);
  }
  if (values.back() != x - 1) values.push_back(x - 1);
  return values;
}

// The same ladder over even values only (dims that RoPE pairs up).
std::vector<int> TowardsEven(int x, int lo) {
  std::vector<int> values;
  for (int half : Towards(x / 2, (lo + 1) / 2)) values.push_back(2 * half);
  return values;
}

// Both ladders merged, smallest first: odd values only help where no pairing is needed.
std::vector<int> TowardsAnyParity(int x, int lo) {
  std::vector<int> values = Towards(x, lo);
  for (int v : TowardsEven(x, lo)) {
    if (v < x) values.push_back(v);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

// Per-item passes (one candidate per row, document or chunk) look at this many
// items at most, so a case with thousands of rows or documents does not build
// millions of candidates; the halving candidates still reach every item.
constexpr size_t kMaxItemsPerPass = 32;

size_t Items(size_t n) { return std::min(n, kMaxItemsPerPass); }

// ---- rows -------------------------------------------------------------------

Candidates RowPasses(const Case& c) {
  Candidates out;
  const int batch = c.batch();
  if (batch <= 1) return out;
  for (int b = 0; b < static_cast<int>(Items(c.rows.size())); ++b) {  // one row alone
    Case n = c;
    n.rows = {c.rows[static_cast<size_t>(b)]};
    out.push_back({fmt::format("rows: keep row {} of {}", b, batch), std::move(n)});
  }
  for (int keep : Towards(batch, 2)) {  // a leading or trailing run of rows
    Case head = c, tail = c;
    head.rows.assign(c.rows.begin(), c.rows.begin() + keep);
    tail.rows.assign(c.rows.end() - keep, c.rows.end());
    out.push_back({fmt::format("rows: keep the first {} of {}", keep, batch), std::move(head)});
    out.push_back({fmt::format("rows: keep the last {} of {}", keep, batch), std::move(tail)});
  }
  for (int b = 0; b < static_cast<int>(Items(c.rows.size())); ++b) {  // drop one row
    Case n = c;
    n.rows.erase(n.rows.begin() + b);
    out.push_back({fmt::format("rows: drop row {} of {}", b, batch), std::move(n)});
  }
  return out;
}

// ---- heads (GQA: q_heads = groups × ratio, kv_heads = groups) ----------------

Candidates HeadPasses(const Case& c) {
  const int groups = c.kv_heads;
  const int ratio = c.kv_heads > 0 ? c.q_heads / c.kv_heads : 1;
  auto options = [](int x) {  // every count up to x when few (5 → 3 keeps "not a power of two")
    std::vector<int> v = {1, x / 2, x - 1, x};
    for (int y = 2; x <= 16 && y < x; ++y) v.push_back(y);
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    v.erase(std::remove_if(v.begin(), v.end(), [x](int y) { return y < 1 || y > x; }), v.end());
    return v;
  };
  std::vector<std::pair<int, int>> shapes;  // (groups, ratio)
  for (int g : options(groups)) {
    for (int r : options(ratio)) {
      if (g != groups || r != ratio) shapes.emplace_back(g, r);
    }
  }
  // Fewest query heads first; at equal count keep the GQA ratio (fewer kv heads).
  std::stable_sort(shapes.begin(), shapes.end(), [](const auto& a, const auto& b) {
    return std::pair(a.first * a.second, a.first) < std::pair(b.first * b.second, b.first);
  });
  Candidates out;
  for (const auto& [g, r] : shapes) {
    Case n = c;
    n.kv_heads = g;
    n.q_heads = g * r;
    out.push_back({fmt::format("heads: Hq={} Hkv={} → Hq={} Hkv={}", c.q_heads, c.kv_heads, n.q_heads,
                               n.kv_heads),
                   std::move(n)});
  }
  return out;
}

// ---- tokens (key length Tk, query length Tq) --------------------------------

enum class Trim { kLargest, kBack, kFront };

// The row's regions in slot order: left pad, documents…, right pad.
std::vector<int*> Regions(RowSpec& row) {
  std::vector<int*> regions = {&row.left_pad};
  for (int& length : row.documents) regions.push_back(&length);
  regions.push_back(&row.right_pad);
  return regions;
}

// Removes n slots from the row. kLargest lowers the largest regions first (water
// filling, so small pads and short documents survive); kBack takes from the right
// pad, then the documents from the last, then the left pad; kFront the reverse.
void TrimRow(RowSpec& row, int n, Trim how) {
  std::vector<int*> regions = Regions(row);
  if (how == Trim::kBack) std::reverse(regions.begin(), regions.end());
  if (how != Trim::kLargest) {
    for (int* region : regions) {
      const int take = std::min(n, *region);
      *region -= take;
      n -= take;
    }
    return;
  }
  // Largest level L with Σ max(0, size − L) ≥ n; cut everything above L + 1 down to
  // L + 1, then take the rest one slot each from regions at L + 1, last first.
  int lo = 0, hi = 0;
  for (int* region : regions) hi = std::max(hi, *region);
  auto removed = [&](int level) {
    int64_t total = 0;
    for (int* region : regions) total += std::max(0, *region - level);
    return total;
  };
  while (lo < hi) {  // largest level with removed(level) ≥ n
    const int mid = lo + (hi - lo + 1) / 2;
    if (removed(mid) >= n) lo = mid; else hi = mid - 1;
  }
  const int level = lo + 1;
  int64_t left = n - removed(level);
  for (int* region : regions) *region = std::min(*region, level);
  for (auto it = regions.rbegin(); it != regions.rend() && left > 0; ++it) {
    if (**it == level) {
      --**it;
      --left;
    }
  }
}

// Fits the query length and decode plan into a key length that shrank; the
// `leading` queries before the first key (Tq > Tk) stay.
void FitToKeyLength(Case& c, int leading) {
  const int key_len = c.key_len();
  c.query_len = leading > 0 ? key_len + leading : std::min(c.query_len, key_len);
  int64_t total = 0;
  for (size_t i = 0; i < c.decode_chunks.size(); ++i) {
    if (total + c.decode_chunks[i] > key_len) {
      const int rest = static_cast<int>(key_len - total);
      if (rest > 0) {
        c.decode_chunks[i] = rest;
        c.decode_chunks.resize(i + 1);
      } else {
        c.decode_chunks.resize(i);
      }
      break;
    }
    total += c.decode_chunks[i];
  }
}

Candidates TokenPasses(const Case& c) {
  Candidates out;
  const int key_len = c.key_len(), leading = std::max(0, c.query_len - key_len);
  static constexpr std::pair<Trim, std::string_view> kTrims[] = {
      {Trim::kLargest, "largest regions"}, {Trim::kBack, "from the back"}, {Trim::kFront, "from the front"}};
  for (int target : Towards(key_len, 1)) {
    const int n = key_len - target;
    for (const auto& [how, what] : kTrims) {
      Case m = c;
      for (RowSpec& row : m.rows) TrimRow(row, n, how);
      FitToKeyLength(m, leading);
      out.push_back({fmt::format("tokens: Tk {} → {} ({})", key_len, target, what), std::move(m)});
    }
    // Prefix-LM: tokens cut from the front with every prefix shorter by as many (a
    // coupled move: the suffix, where the queries are, keeps its length).
    if (std::any_of(c.rows.begin(), c.rows.end(), [](const RowSpec& r) { return r.prefix_len > 0; })) {
      Case m = c;
      for (RowSpec& row : m.rows) {
        TrimRow(row, n, Trim::kFront);
        row.prefix_len = std::max(0, row.prefix_len - n);
      }
      FitToKeyLength(m, leading);
      out.push_back({fmt::format("tokens: Tk {} → {} (from the front, every prefix {} shorter)", key_len, target, n),
                     std::move(m)});
    }
    if (c.query_len > 1 && c.query_len < key_len) {  // keep the past length Tk − Tq
      Case m = c;
      for (RowSpec& row : m.rows) TrimRow(row, n, Trim::kLargest);
      m.query_len = std::max(1, c.query_len - n);
      FitToKeyLength(m, 0);
      out.push_back({fmt::format("tokens: Tk {} → {}, Tq {} → {}", key_len, target, c.query_len, m.query_len),
                     std::move(m)});
    }
  }
  for (int tq : Towards(c.query_len, 1)) {
    Case m = c;
    m.query_len = tq;
    out.push_back({fmt::format("tokens: Tq {} → {}", c.query_len, tq), m});
    // Leading queries (Tq > Tk) with the offsets that hold their positions ≥ 0:
    // fewer leading queries, every offset lower by as many (a coupled move; each
    // field alone would leave a case that no longer fails, or is invalid).
    const int fewer = leading - std::max(0, tq - key_len);
    if (fewer > 0) {
      for (RowSpec& row : m.rows) row.position_offset = std::max(0, row.position_offset - fewer);
      FitToKeyLength(m, std::max(0, tq - key_len));
      out.push_back({fmt::format("tokens: Tq {} → {} with every offset lower by {}", c.query_len, tq, fewer),
                     std::move(m)});
    }
  }
  return out;
}

// ---- documents and padding (key length unchanged) ---------------------------

Candidates DocumentPasses(const Case& c) {
  Candidates out;
  for (size_t b = 0; b < Items(c.rows.size()); ++b) {
    const RowSpec& row = c.rows[b];
    if (row.documents.size() > 1) {  // one document holding the row's real tokens
      Case m = c;
      m.rows[b].documents = {row.real_tokens()};
      out.push_back({fmt::format("documents: rows[{}] one document", b), std::move(m)});
    }
    for (size_t d = 0; d + 1 < Items(row.documents.size()); ++d) {
      if (row.documents[d] == 0 || row.documents[d + 1] == 0) {
        Case m = c;
        std::vector<int>& docs = m.rows[b].documents;
        docs[d] += docs[d + 1];
        docs.erase(docs.begin() + static_cast<std::ptrdiff_t>(d) + 1);
        out.push_back({fmt::format("documents: rows[{}] drop an empty document", b), std::move(m)});
      }
    }
    for (size_t d = 0; d + 1 < Items(row.documents.size()); ++d) {
      Case m = c;
      std::vector<int>& docs = m.rows[b].documents;
      docs[d] += docs[d + 1];
      docs.erase(docs.begin() + static_cast<std::ptrdiff_t>(d) + 1);
      out.push_back({fmt::format("documents: rows[{}] merge documents {} and {}", b, d, d + 1), std::move(m)});
    }
    if (row.left_pad > 0) {
      Case m = c;
      m.rows[b].documents.front() += row.left_pad;
      m.rows[b].left_pad = 0;
      out.push_back({fmt::format("padding: rows[{}] left pad {} → 0", b, row.left_pad), std::move(m)});
    }
    if (row.right_pad > 0) {
      Case m = c;
      m.rows[b].documents.back() += row.right_pad;
      m.rows[b].right_pad = 0;
      out.push_back({fmt::format("padding: rows[{}] right pad {} → 0", b, row.right_pad), std::move(m)});
    }
  }
  return out;
}

// ---- decode plan -------------------------------------------------------------

Candidates DecodePasses(const Case& c) {
  Candidates out;
  if (c.decode_chunks.empty()) return out;
  {
    Case m = c;
    m.decode_chunks.clear();
    out.push_back({"decode: full prefill only", std::move(m)});
  }
  for (size_t i = 0; c.decode_chunks.size() > 1 && i < Items(c.decode_chunks.size()); ++i) {
    Case m = c;
    m.decode_chunks.erase(m.decode_chunks.begin() + static_cast<std::ptrdiff_t>(i));
    out.push_back({fmt::format("decode: drop chunk {}", i), std::move(m)});
  }
  for (size_t i = 0; i < Items(c.decode_chunks.size()); ++i) {
    for (int size : Towards(c.decode_chunks[i], 1)) {
      Case m = c;
      m.decode_chunks[i] = size;
      out.push_back({fmt::format("decode: chunk {} {} → {}", i, c.decode_chunks[i], size), std::move(m)});
    }
  }
  return out;
}

// ---- dims --------------------------------------------------------------------

// The rotary dim for a new head dim: 0 (full) stays full; a partial one shrinks
// in proportion, stays even and partial where it can.
int RotaryDimFor(const Case& c, int head_dim) {
  const int rd = c.encoding.rope.rotary_dim;
  if (rd == 0 || rd >= c.head_dim) return rd == 0 ? 0 : head_dim;
  int scaled = static_cast<int>(static_cast<int64_t>(rd) * head_dim / c.head_dim) / 2 * 2;
  scaled = std::clamp(scaled, 2, std::max(2, head_dim - 2));
  return scaled >= head_dim ? 0 : scaled;
}

Candidates DimPasses(const Case& c) {
  Candidates out;
  if (c.value_dim == c.head_dim) {  // kernels that need Dv = D shrink both at once
    for (int d : TowardsAnyParity(c.head_dim, 2)) {
      Case m = c;
      m.head_dim = m.value_dim = d;
      m.encoding.rope.rotary_dim = RotaryDimFor(c, d);
      out.push_back({fmt::format("dims: D = Dv {} → {}", c.head_dim, d), std::move(m)});
    }
  }
  for (int d : TowardsAnyParity(c.head_dim, 2)) {
    Case m = c;
    m.head_dim = d;
    m.encoding.rope.rotary_dim = RotaryDimFor(c, d);
    out.push_back({fmt::format("dims: D {} → {}", c.head_dim, d), std::move(m)});
  }
  for (int dv : Towards(c.value_dim, 1)) {
    Case m = c;
    m.value_dim = dv;
    out.push_back({fmt::format("dims: Dv {} → {}", c.value_dim, dv), std::move(m)});
  }
  return out;
}

// ---- positions and prefixes ----------------------------------------------------

Candidates PositionPasses(const Case& c) {
  Candidates out;
  // Leading queries (Tq > Tk) keep their positions >= 0: offsets shrink towards Tq − Tk.
  const int lowest = std::max(0, c.query_len - c.key_len());
  const bool any_offset =
      std::any_of(c.rows.begin(), c.rows.end(), [&](const RowSpec& r) { return r.position_offset != lowest; });
  if (any_offset && c.batch() > 1) {
    Case m = c;
    for (RowSpec& row : m.rows) row.position_offset = lowest;
    out.push_back({fmt::format("positions: every offset → {}", lowest), std::move(m)});
  }
  for (size_t b = 0; b < Items(c.rows.size()); ++b) {
    for (int offset : Towards(c.rows[b].position_offset, lowest)) {
      Case m = c;
      m.rows[b].position_offset = offset;
      out.push_back({fmt::format("positions: rows[{}] offset {} → {}", b, c.rows[b].position_offset, offset),
                     std::move(m)});
    }
  }
  for (size_t b = 0; b < Items(c.rows.size()); ++b) {
    for (int prefix : Towards(c.rows[b].prefix_len, 0)) {
      Case m = c;
      m.rows[b].prefix_len = prefix;
      out.push_back({fmt::format("prefix: rows[{}] prefix {} → {}", b, c.rows[b].prefix_len, prefix),
                     std::move(m)});
    }
  }
  return out;
}

// ---- visibility ----------------------------------------------------------------

Candidates VisibilityPasses(const Case& c) {
  Candidates out;
  const bool any_prefix = std::any_of(c.rows.begin(), c.rows.end(), [](const RowSpec& r) { return r.prefix_len != 0; });
  if (c.visibility != VisibilityKind::kCausal || c.window != 0 || c.window_right != 0 || c.chunk != 0 || any_prefix) {
    Case m = c;
    m.visibility = VisibilityKind::kCausal;
    m.window = 0;
    m.window_right = 0;
    m.chunk = 0;
    for (RowSpec& row : m.rows) row.prefix_len = 0;
    out.push_back({fmt::format("visibility: {} → causal", Name(c.visibility)), std::move(m)});
  }
  if (c.visibility != VisibilityKind::kSlidingWindow && c.window != 0) {
    Case m = c;
    m.window = 0;
    out.push_back({"visibility: unused window → 0", std::move(m)});
  }
  if (c.visibility != VisibilityKind::kChunked && c.chunk != 0) {
    Case m = c;
    m.chunk = 0;
    out.push_back({"visibility: unused chunk → 0", std::move(m)});
  }
  for (int w : Towards(c.window, 1)) {
    Case m = c;
    m.window = w;
    out.push_back({fmt::format("visibility: window {} → {}", c.window, w), std::move(m)});
  }
  for (int r : Towards(c.window_right, 0)) {  // a two-sided window towards the causal one
    Case m = c;
    m.window_right = r;
    out.push_back({fmt::format("visibility: window right {} → {}", c.window_right, r), std::move(m)});
  }
  for (int size : Towards(c.chunk, 1)) {
    Case m = c;
    m.chunk = size;
    out.push_back({fmt::format("visibility: chunk {} → {}", c.chunk, size), std::move(m)});
  }
  return out;
}

// ---- encoding ------------------------------------------------------------------

bool UsesRope(EncodingKind kind) { return kind == EncodingKind::kRope || kind == EncodingKind::kXpos; }

// The encoding with every field its kind does not read back at its default.
EncodingSpec WithoutUnusedFields(const EncodingSpec& e) {
  EncodingSpec clean;
  clean.kind = e.kind;
  if (UsesRope(e.kind)) clean.rope = e.rope;
  if (e.kind == EncodingKind::kT5) {
    clean.t5_buckets = e.t5_buckets;
    clean.t5_max_distance = e.t5_max_distance;
    clean.t5_bidirectional = e.t5_bidirectional;
  }
  if (e.kind == EncodingKind::kKerple) clean.kerple = e.kerple;
  if (e.kind == EncodingKind::kXpos) clean.xpos_scale_base = e.xpos_scale_base;
  if (e.kind == EncodingKind::kSandwich) clean.sandwich_scale = e.sandwich_scale;
  return clean;
}

Candidates EncodingPasses(const Case& c) {
  Candidates out;
  const EncodingSpec& e = c.encoding;
  const EncodingSpec plain;
  auto add = [&](std::string change, auto&& edit) {
    Case m = c;
    edit(m.encoding);
    if (!(m.encoding == e)) out.push_back({std::move(change), std::move(m)});
  };
  if (e.kind != EncodingKind::kNone) {
    add(fmt::format("encoding: {} → none", Name(e.kind)), [](EncodingSpec& x) { x = EncodingSpec{}; });
  }
  add("encoding: unused fields → defaults", [](EncodingSpec& x) { x = WithoutUnusedFields(x); });
  if (UsesRope(e.kind)) {
    const RopeSpec& r = e.rope;
    if (r.scaling != RopeScaling::kNone) {
      add(fmt::format("rope: scaling {} → none", Name(r.scaling)), [&](EncodingSpec& x) {
        RopeSpec plain_rope;
        plain_rope.layout = r.layout;
        plain_rope.base = r.base;
        plain_rope.rotary_dim = r.rotary_dim;
        plain_rope.log_n = r.log_n;
        plain_rope.original_context = r.log_n ? r.original_context : plain_rope.original_context;
        x.rope = plain_rope;
      });
    }
    add("rope: log-n off", [](EncodingSpec& x) { x.rope.log_n = false; });
    add(fmt::format("rope: partial rotary {} → full", r.rotary_dim), [](EncodingSpec& x) { x.rope.rotary_dim = 0; });
    for (int rd : TowardsEven(c.rotary_dim(), 2)) {
      if (r.rotary_dim == 0) break;  // full rotary stays full here
      add(fmt::format("rope: rotary dim {} → {}", c.rotary_dim(), rd), [rd](EncodingSpec& x) { x.rope.rotary_dim = rd; });
    }
    add("rope: layout → half-split", [](EncodingSpec& x) { x.rope.layout = RopeSpec{}.layout; });
    add("rope: base → 10000", [](EncodingSpec& x) { x.rope.base = RopeSpec{}.base; });
    add("rope: factor → 1", [](EncodingSpec& x) { x.rope.factor = RopeSpec{}.factor; });
    add("rope: original context → default", [](EncodingSpec& x) { x.rope.original_context = RopeSpec{}.original_context; });
    add("rope: ntk exponent → default", [](EncodingSpec& x) { x.rope.ntk_exact_exponent = RopeSpec{}.ntk_exact_exponent; });
    add("rope: yarn betas → default", [](EncodingSpec& x) {
      x.rope.beta_fast = RopeSpec{}.beta_fast;
      x.rope.beta_slow = RopeSpec{}.beta_slow;
    });
    add("rope: attn factor → default", [](EncodingSpec& x) { x.rope.attn_factor = RopeSpec{}.attn_factor; });
    add("rope: llama3 frequency factors → default", [](EncodingSpec& x) {
      x.rope.low_freq_factor = RopeSpec{}.low_freq_factor;
      x.rope.high_freq_factor = RopeSpec{}.high_freq_factor;
    });
    add("rope: mixed b → default", [](EncodingSpec& x) { x.rope.mixed_b = RopeSpec{}.mixed_b; });
  }
  if (e.kind == EncodingKind::kT5) {
    add("t5: buckets and distance → default", [&](EncodingSpec& x) {
      x.t5_buckets = plain.t5_buckets;
      x.t5_max_distance = plain.t5_max_distance;
    });
    add("t5: unidirectional", [](EncodingSpec& x) { x.t5_bidirectional = false; });
  }
  if (e.kind == EncodingKind::kKerple) add("kerple: → log", [&](EncodingSpec& x) { x.kerple = plain.kerple; });
  if (e.kind == EncodingKind::kXpos) {
    add("xpos: scale base → default", [&](EncodingSpec& x) { x.xpos_scale_base = plain.xpos_scale_base; });
  }
  if (e.kind == EncodingKind::kSandwich) {
    add("sandwich: scale → default", [&](EncodingSpec& x) { x.sandwich_scale = plain.sandwich_scale; });
  }
  return out;
}

// ---- numerics and data -----------------------------------------------------------

Candidates NumericPasses(const Case& c) {
  Candidates out;
  auto add = [&](bool differs, std::string change, auto&& edit) {
    if (!differs) return;
    Case m = c;
    edit(m);
    out.push_back({std::move(change), std::move(m)});
  };
  const Case plain;
  add(c.mask != plain.mask, fmt::format("mask: {} → {}", Name(c.mask), Name(plain.mask)),
      [&](Case& m) {
        m.mask = plain.mask;
        m.layout = plain.layout;  // a layout and page size are a descriptor's
        m.page_size = plain.page_size;
      });
  add(c.dtype != plain.dtype, fmt::format("dtype: {} → {}", Name(c.dtype), Name(plain.dtype)),
      [&](Case& m) { m.dtype = plain.dtype; });
  add(c.softcap != 0.0, "softcap → off", [](Case& m) { m.softcap = 0.0; });
  add(c.layout != DescriptorLayout::kAuto, fmt::format("layout {} → the kernel's first", Name(c.layout)),
      [](Case& m) { m.layout = DescriptorLayout::kAuto; });
  add(c.page_size != 0, fmt::format("page size {} → the kernel's first", c.page_size), [](Case& m) { m.page_size = 0; });
  add(c.scale != 0.0, "scale → 1/sqrt(D)", [](Case& m) { m.scale = 0.0; });
  add(c.profile != plain.profile, fmt::format("data: profile {} → {}", Name(c.profile), Name(plain.profile)),
      [&](Case& m) { m.profile = plain.profile; });
  add(c.seed != 0, fmt::format("data: seed {} → 0", c.seed), [](Case& m) { m.seed = 0; });
  return out;
}

// ---- normal form ------------------------------------------------------------------

// Seed 0, the normal profile and one head (Hq = Hkv = 1), all three at once, then
// each alone: tried before anything else, so two findings of one bug that differ
// only there meet in one case.
Candidates NormalisePasses(const Case& c) {
  Candidates out;
  const Case plain;
  const auto normalised = [&](bool seed, bool profile, bool heads) {
    Case m = c;
    if (seed) m.seed = 0;
    if (profile) m.profile = plain.profile;
    if (heads) m.q_heads = m.kv_heads = 1;
    return m;
  };
  const bool seed = c.seed != 0, profile = c.profile != plain.profile, heads = c.q_heads != 1 || c.kv_heads != 1;
  if (seed + profile + heads > 1) out.push_back({"normal form: seed 0, normal data, one head", normalised(seed, profile, heads)});
  if (seed) out.push_back({fmt::format("normal form: seed {} → 0", c.seed), normalised(true, false, false)});
  if (profile) {
    out.push_back({fmt::format("normal form: profile {} → {}", Name(c.profile), Name(plain.profile)),
                   normalised(false, true, false)});
  }
  if (heads) {
    out.push_back({fmt::format("normal form: Hq={} Hkv={} → one head", c.q_heads, c.kv_heads),
                   normalised(false, false, true)});
  }
  return out;
}

// ---- the driver ----------------------------------------------------------------------

using Pass = Candidates (*)(const Case&);
// The normal form first, then size (every later check is cheaper on a smaller
// case), then structure, then simplifications of conventions and data; the round
// repeats to a fixpoint.
constexpr Pass kPasses[] = {NormalisePasses, RowPasses,      TokenPasses,    HeadPasses,
                            DimPasses,       DecodePasses,   DocumentPasses, PositionPasses,
                            VisibilityPasses, EncodingPasses, NumericPasses};

class Shrinker {
 public:
  Shrinker(const std::function<bool(const Case&)>& still_fails, const ShrinkOptions& options)
      : still_fails_(still_fails), options_(options), start_(Clock::now()) {}

  ShrinkResult Run(const Case& failing) {
    result_.minimal = failing;
    seen_.insert(Hash(failing));
    for (bool progress = true; progress && !result_.stopped;) {
      progress = false;
      for (Pass pass : kPasses) {
        while (!result_.stopped && TryFirst(pass(result_.minimal))) progress = true;
        if (result_.stopped) break;
      }
    }
    result_.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    return std::move(result_);
  }

 private:
  bool OutOfBudget() const {
    if (result_.attempts >= options_.max_attempts) return true;
    if (options_.max_seconds > 0.0 &&
        std::chrono::duration<double>(Clock::now() - start_).count() >= options_.max_seconds) {
      return true;
    }
    return options_.should_stop && options_.should_stop();
  }

  // Tries the candidates in order; the first valid, new one that still fails
  // becomes the minimal case. Returns whether one was kept.
  bool TryFirst(Candidates candidates) {
    for (Candidate& candidate : candidates) {
      if (candidate.c == result_.minimal) continue;
      if (Validate(candidate.c) || (options_.admissible && !options_.admissible(candidate.c))) {
        ++result_.invalid;
        continue;
      }
      if (!seen_.insert(Hash(candidate.c)).second) continue;
      if (OutOfBudget()) {
        result_.stopped = true;
        return false;
      }
      ++result_.attempts;
      if (still_fails_(candidate.c)) {
        result_.minimal = std::move(candidate.c);
        ++result_.accepted;
        result_.changes.push_back(std::move(candidate.change));
        return true;
      }
    }
    return false;
  }

  const std::function<bool(const Case&)>& still_fails_;
  const ShrinkOptions& options_;
  Clock::time_point start_;
  ShrinkResult result_;
  std::unordered_set<uint64_t> seen_;
};

}  // namespace

std::string SizeLine(const Case& c) {
  size_t documents = 0;
  for (const RowSpec& row : c.rows) documents += row.documents.size();
  std::string line = fmt::format("B={} Hq={} Hkv={} D={} Dv={} Tq={} Tk={} docs={}", c.batch(), c.q_heads,
                                 c.kv_heads, c.head_dim, c.value_dim, c.query_len, c.key_len(), documents);
  if (!c.decode_chunks.empty()) line += fmt::format(" chunks={}", c.decode_chunks.size());
  return line;
}

ShrinkResult Shrink(const Case& failing, const std::function<bool(const Case&)>& still_fails,
                    const ShrinkOptions& options) {
  return Shrinker(still_fails, options).Run(failing);
}

}  // namespace attncheck
