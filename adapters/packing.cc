// Packing and unpacking of varlen and paged descriptor calls (packing.h): the
// token maps are reference::PackedTokensOf's, the page slots reference::PagedSlot's,
// so the layout handed over is the one the descriptor describes.
#include "adapters/packing.h"

#include <algorithm>
#include <cmath>

#include "reference/descriptor.h"

namespace attncheck {
namespace {

// Keys [0, n) of sequence s as (batch row, key slot) of the padded tensors.
struct SequenceKeys {
  const VisibilityDescriptor& d;
  const reference::PackedTokens& tokens;
  int tk;
  std::vector<int> shift;  // padded batch: row b's keys moved down by shift[b] (reference::KeySlotShift)
  int Count(int s) const {
    if (d.varlen()) return d.cu_seqlens_k[s + 1] - d.cu_seqlens_k[s];
    return d.seqused_k.empty() ? tk : d.seqused_k[s];
  }
  std::pair<int, int> Slot(int s, int j) const {
    if (d.varlen()) return tokens.key_of[static_cast<size_t>(d.cu_seqlens_k[s] + j)];
    return {s, j + shift[static_cast<size_t>(s)]};
  }
};

// to[b, h, j, :] = from[b, h, (j + shift_b) mod Tk, :]: each row's keys moved down to
// slot 0 (shift_b its left pad), its pad slots after them; `back` undoes it.
template <class From, class To>
void Rotate(const Case& c, const VisibilityDescriptor& d, const From& from, To& to, bool back) {
  const int batch = from.shape[0], heads = from.shape[1], tk = from.shape[2], dims = from.shape[3];
  for (int b = 0; b < batch; ++b) {
    const int shift = reference::KeySlotShift(d, c, b);
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j < tk; ++j) {
        const int moved = (j + shift) % tk;
        const int from_slot = back ? j : moved, to_slot = back ? moved : j;
        for (int e = 0; e < dims; ++e) to.at(b, h, to_slot, e) = from.at(b, h, from_slot, e);
      }
  }
}

// to[:, h, t, :] = from[b, h, slot, :] for every head, (b, slot) = slots[t].
void Gather(const TensorF& from, const std::vector<std::pair<int, int>>& slots, TensorF& to) {
  const int heads = from.shape[1], dims = from.shape[3];
  to = TensorF(1, heads, static_cast<int>(slots.size()), dims);
  for (int h = 0; h < heads; ++h)
    for (size_t t = 0; t < slots.size(); ++t)
      std::copy_n(&from.at(slots[t].first, h, slots[t].second, 0), dims, &to.at(0, h, static_cast<int>(t), 0));
}

// Pages [num_pages, H, page_size, ·] of the keys of every sequence, garbage elsewhere.
void Paginate(const TensorF& from, const SequenceKeys& keys, TensorF& pages) {
  const PagedKv& paged = keys.d.paged;
  const int heads = from.shape[1], dims = from.shape[3];
  pages = TensorF(paged.num_pages, heads, paged.page_size, dims, kGarbage);
  if (dims == 0) return;
  for (int s = 0; s < keys.d.sequences(); ++s)
    for (int j = 0; j < keys.Count(s); ++j) {
      const auto [b, slot] = keys.Slot(s, j);
      const auto [page, offset] = reference::PagedSlot(paged, s, j);
      for (int h = 0; h < heads; ++h) std::copy_n(&from.at(b, h, slot, 0), dims, &pages.at(page, h, offset, 0));
    }
}

std::vector<int> GatherPositions(std::span<const int> positions, int t, const std::vector<std::pair<int, int>>& slots) {
  std::vector<int> gathered;
  gathered.reserve(slots.size());
  for (const auto& [b, slot] : slots) gathered.push_back(positions[static_cast<size_t>(b) * t + slot]);
  return gathered;
}

}  // namespace

bool NeedsPacking(const VisibilityDescriptor& d, const Case& c) {
  return d.varlen() || d.paged.page_size > 0 || reference::KeysCompacted(d, c);
}

std::vector<int64_t> KvShape(const AttentionArgs& a, int dim) {
  const VisibilityDescriptor* d = a.mask.descriptor;
  if (d != nullptr && d->paged.page_size > 0) return {d->paged.num_pages, a.kv_heads, d->paged.page_size, dim};
  return {a.batch, a.kv_heads, a.tk, dim};
}

DescriptorForms SessionForms(DescriptorForms forms) {
  if (!forms.varlen && !forms.paged) return forms;
  forms.varlen = forms.paged = false;
  forms.page_size = 0;
  forms.seqused_q = forms.seqused_k = forms.leftpad_k = true;
  return forms;
}

void Pack(const Case& c, const VisibilityDescriptor& d, const TensorF& q, const TensorF& k, const TensorF& v,
          std::span<const int> query_positions, std::span<const int> key_positions, PackedCall& packed) {
  const reference::PackedTokens tokens = d.varlen() ? reference::PackedTokensOf(c) : reference::PackedTokens{};
  const int tq = q.shape[2], tk = k.shape[2];
  if (d.varlen()) {
    packed.batch = 1;
    packed.tq = static_cast<int>(tokens.query_of.size());
    packed.tk = static_cast<int>(tokens.key_of.size());
    Gather(q, tokens.query_of, packed.q);
    packed.query_positions = GatherPositions(query_positions, tq, tokens.query_of);
    packed.key_positions = GatherPositions(key_positions, tk, tokens.key_of);
  } else {
    packed.batch = q.shape[0];
    packed.tq = tq;
    packed.tk = tk;
    packed.q = q;
    packed.query_positions.assign(query_positions.begin(), query_positions.end());
    packed.key_positions.assign(key_positions.begin(), key_positions.end());
    if (reference::KeysCompacted(d, c)) {
      for (int b = 0; b < packed.batch; ++b) {
        const int shift = reference::KeySlotShift(d, c, b);
        const auto row = packed.key_positions.begin() + static_cast<std::ptrdiff_t>(b) * tk;
        std::rotate(row, row + shift, row + tk);
      }
    }
  }
  SequenceKeys keys{d, tokens, tk, {}};
  if (!d.varlen()) {
    for (int b = 0; b < c.batch(); ++b) keys.shift.push_back(reference::KeySlotShift(d, c, b));
  }
  if (d.paged.page_size > 0) {
    Paginate(k, keys, packed.k);
    Paginate(v, keys, packed.v);
  } else if (d.varlen()) {
    Gather(k, tokens.key_of, packed.k);
    Gather(v, tokens.key_of, packed.v);
  } else if (reference::KeysCompacted(d, c)) {
    packed.k = k;
    packed.v = v;
    Rotate(c, d, k, packed.k, /*back=*/false);
    Rotate(c, d, v, packed.v, /*back=*/false);
  } else {
    packed.k = k;
    packed.v = v;
  }
}

void Unpack(const Case& c, const VisibilityDescriptor& d, std::span<const float> kernel_out, MaskedRowPolicy policy,
            const TensorF& v, TensorD& out, std::vector<uint8_t>& unproduced) {
  const int batch = out.shape[0], heads = out.shape[1], tq = out.shape[2], dv = out.shape[3];
  unproduced.clear();
  if (!d.varlen()) {
    for (size_t e = 0; e < out.data.size(); ++e) out.data[e] = kernel_out[e];
    return;
  }
  // Every slot first holds the declared value of a row with no visible key.
  const int tk = v.shape[2], group = heads / std::max(v.shape[1], 1);
  for (int b = 0; b < batch; ++b)
    for (int h = 0; h < heads; ++h)
      for (int e = 0; e < dv; ++e) {
        double fill = policy == MaskedRowPolicy::kNaN ? std::nan("") : 0.0;
        if (policy == MaskedRowPolicy::kMeanV) {
          for (int j = 0; j < tk; ++j) fill += v.at(b, h / group, j, e);
          fill /= std::max(tk, 1);
        }
        for (int i = 0; i < tq; ++i) out.at(b, h, i, e) = fill;
      }
  const reference::PackedTokens tokens = reference::PackedTokensOf(c);
  const int total_q = static_cast<int>(tokens.query_of.size());
  unproduced.assign(static_cast<size_t>(batch) * tq, 1);
  for (const auto& [b, i] : tokens.query_of) unproduced[static_cast<size_t>(b) * tq + i] = 0;
  if (std::find(unproduced.begin(), unproduced.end(), 1) == unproduced.end()) unproduced.clear();
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < total_q; ++t) {
      const auto [b, i] = tokens.query_of[static_cast<size_t>(t)];
      const float* from = kernel_out.data() + (static_cast<size_t>(h) * total_q + t) * dv;
      for (int e = 0; e < dv; ++e) out.at(b, h, i, e) = from[e];
    }
}

void PackQueryRows(const Case& c, const TensorF& rows, TensorF& packed) {
  Gather(rows, reference::PackedTokensOf(c).query_of, packed);
}

void UnpackRows(const Case& c, bool keys, std::span<const float> packed, TensorD& to) {
  const reference::PackedTokens tokens = reference::PackedTokensOf(c);
  const std::vector<std::pair<int, int>>& slots = keys ? tokens.key_of : tokens.query_of;
  const int heads = to.shape[1], dims = to.shape[3], total = static_cast<int>(slots.size());
  for (int h = 0; h < heads; ++h)
    for (int t = 0; t < total; ++t) {
      const auto [b, slot] = slots[static_cast<size_t>(t)];
      const float* from = packed.data() + (static_cast<size_t>(h) * total + t) * dims;
      for (int e = 0; e < dims; ++e) to.at(b, h, slot, e) = from[e];
    }
}

void UncompactKeyRows(const Case& c, const VisibilityDescriptor& d, std::span<const float> rows, TensorD& to) {
  struct RowsView {  // rows [B, H, Tk, dim] as the kernel wrote them
    std::span<const float> data;
    std::vector<int> shape;
    float at(int b, int h, int j, int e) const {
      return data[((static_cast<size_t>(b) * shape[1] + h) * shape[2] + j) * shape[3] + e];
    }
  };
  const RowsView view{rows, {to.shape[0], to.shape[1], to.shape[2], to.shape[3]}};
  Rotate(c, d, view, to, /*back=*/true);
}

}  // namespace attncheck
