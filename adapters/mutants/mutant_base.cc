// The kernel every mutant is built on (mutant_base.h): the eigen adapter's pieces
// (EigenAdditiveMask, EigenAttendHead, EigenRotate) in the eigen adapter's order:
//   positions → q/k encoding → mask (+ owned score bias) → per-(b, h) softmax·V.
// A session keeps the raw appended tokens and their positions and runs the same
// pipeline over the whole cache at every attend, so a hook sees the cache exactly
// as one call would (with the steps in Call::step_start). What a mutant knows of
// the visibility is the mask or descriptor it is handed (Call::given).
#include "adapters/mutants/mutant_base.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/kv_cache.h"
#include "reference/mask.h"
#include "reference/positional.h"

namespace attncheck::mutants {
namespace {

class MutantSession final : public Session {
 public:
  MutantSession(MutantAdapter& adapter, const SessionArgs& args)
      : adapter_(adapter), args_(args),
        cache_(args.batch, args.kv_heads, args.head_dim, args.value_dim) {}

  void append(std::span<const float> k, std::span<const float> v, std::span<const int> positions,
              int n) override {
    step_start_.insert(step_start_.end(), static_cast<size_t>(n), cache_.length());
    cache_.Append(k, v, positions, n);
  }

  void attend(std::span<const float> q, std::span<const int> positions, int tq, const MaskArgs& mask,
              std::span<float> out) override {
    const std::vector<float> k = cache_.AllKeys(), v = cache_.AllValues();  // [B, Hkv, keys, D] / [.., Dv]
    const std::vector<int> key_positions = cache_.AllPositions();           // [B, keys]
    Call call;
    call.spec = &args_.spec;
    call.tq = tq;
    call.keys = cache_.length();
    call.step_start = step_start_;
    call.key_positions = key_positions;
    Inputs in;
    in.batch = args_.batch;
    in.q_heads = args_.q_heads;
    in.kv_heads = args_.kv_heads;
    in.head_dim = args_.head_dim;
    in.value_dim = args_.value_dim;
    in.q = q;
    in.k = k;
    in.v = v;
    in.query_positions = positions;
    in.key_positions = key_positions;
    in.mask = mask;
    in.apply_positional = args_.apply_positional;
    in.apply_bias = args_.apply_bias;
    in.scale = static_cast<float>(args_.scale);
    in.current_length = args_.current_length;
    adapter_.Run(call, in, out);
  }

 private:
  MutantAdapter& adapter_;
  SessionArgs args_;
  adapters::KvCache<float> cache_;  // raw (unrotated) keys, values, positions
  std::vector<int> step_start_;     // [T]: the first slot of each slot's step
};

// x [B, H, T, D] through the reference's q/k encoding (sinusoidal, learned, xPos)
// in double, rounded back to float.
void ReferenceEncode(const KernelSpec& c, reference::Side side, std::vector<float>& x, int batch, int heads, int tokens,
                     int dim, std::span<const int> positions, int current_length) {
  TensorD t(batch, heads, tokens, dim);
  for (size_t e = 0; e < x.size(); ++e) t.data[e] = x[e];
  reference::ApplyPositional(c, side, t, positions, current_length);
  for (size_t e = 0; e < x.size(); ++e) x[e] = static_cast<float>(t.data[e]);
}

// The eigen adapter's conversion, with the fill of the spec's dtype (the eigen
// adapter is f32 only; the f16 mutant's twin blocks the f16 fill the same way).
std::vector<float> DefaultMask(const Call& call, const MaskArgs& mask, size_t size) {
  if (!IsAdditive(mask.convention) || call.spec->dtype == Dtype::kF32) return EigenAdditiveMask(mask, size);
  const float fill = static_cast<float>(reference::AdditiveFill(mask.convention, call.spec->dtype));
  std::vector<float> additive(mask.additive.begin(), mask.additive.end());
  for (float& value : additive) value = value == fill ? kNegInf : value;
  return additive;
}

}  // namespace

int Call::StepStart(int slot) const {
  if (!step_start.empty()) return step_start[static_cast<size_t>(slot)];
  return tq < keys && slot >= keys - tq ? keys - tq : 0;
}

bool Call::Given(int b, int qs, int ks) const {
  if (!IsQuery(qs) || ks < 0 || ks >= keys) return false;
  return given[(static_cast<size_t>(b) * tq + (qs - (keys - tq))) * keys + ks] != 0;
}

bool Call::QueryReal(int b, int qs) const {
  for (int ks = 0; ks < keys; ++ks)
    if (Given(b, qs, ks)) return true;
  return false;
}

int Call::LeadingUnused(int b) const {
  int slot = 0;
  while (slot < keys && !KeyUsed(b, slot)) ++slot;
  return slot;
}

void MutantAdapter::Configure(std::string name, std::string description, bool defective) {
  name_ = std::move(name);
  description_ = std::move(description);
  defective_ = defective;
}

Capabilities MutantAdapter::capabilities() const {
  // The eigen kernel's, without the score biases the harness would fold per head
  // (that path hands the adapter a one-head copy of the case); Adjust adds back
  // what a mutant's defect needs.
  Capabilities caps = MakeEigenAdapter()->capabilities();
  caps.encodings = {EncodingKind::kNone, EncodingKind::kRope};
  caps.queries_beyond_keys = false;  // the mutants index query slots keys − tq + i ≥ 0
  caps.has_backward = false;         // the backward mutants' (backward_mutants.cc) only
  Adjust(caps);
  return caps;
}

std::vector<float> MutantAdapter::ConvertMask(const Call& call, const MaskArgs& mask, size_t size) const {
  return DefaultMask(call, mask, size);
}

void MutantAdapter::Rotate(const KernelSpec& c, int current_length, std::span<float> x, int batch, int heads, int tokens,
                           std::span<const int> positions, bool query) {
  EigenRotate(c, current_length, x, batch, heads, tokens, positions, query);
}

double MutantAdapter::Bias(const KernelSpec& c, int head, int query_pos, int key_pos) const {
  return reference::ScoreBias(c, head, query_pos, key_pos);
}

void MutantAdapter::AttendHead(const Head& a) {
  EigenAttendHead(a.q, a.k, a.v, a.mask, a.tq, a.tk, a.head_dim, a.value_dim, a.scale, a.softcap, a.out);
}

// `given`: the handed mask as DefaultMask converts it (what the twin attends with).
std::vector<float> MutantAdapter::Mask(const Call& call, const Inputs& in, std::vector<float> given) {
  if (!defective_) return given;
  if (!OwnsMask()) return ConvertMask(call, in.mask, given.size());
  std::vector<float> mask(given.size());  // [B, tq, keys]
  size_t e = 0;
  for (int b = 0; b < in.batch; ++b)
    for (int i = 0; i < call.tq; ++i)
      for (int j = 0; j < call.keys; ++j, ++e) mask[e] = Visible(call, b, call.query_slot(i), j) ? 0.0f : kNegInf;
  return mask;
}

void MutantAdapter::Run(const Call& handed, const Inputs& in, std::span<float> out) {
  // the visibility handed over, read once: given [B, tq, keys] and key_used [B, keys]
  Call call = handed;
  const size_t size = static_cast<size_t>(in.batch) * call.tq * call.keys;
  std::vector<float> given_mask = DefaultMask(call, in.mask, size);
  std::vector<uint8_t> given(size), key_used(static_cast<size_t>(in.batch) * call.keys, 0);
  for (size_t e = 0; e < size; ++e) {
    given[e] = given_mask[e] != kNegInf ? 1 : 0;
    if (given[e]) key_used[e / (static_cast<size_t>(call.tq) * call.keys) * call.keys + e % call.keys] = 1;
  }
  call.given = given;
  call.key_used = key_used;

  const KernelSpec& c = *call.spec;
  const int batch = in.batch, hq = in.q_heads, hkv = in.kv_heads, tq = call.tq, keys = call.keys;
  const int d = in.head_dim, dv = in.value_dim;

  // positions
  std::vector<int> q_pos(in.query_positions.begin(), in.query_positions.end());  // [B, tq]
  std::vector<int> k_pos(in.key_positions.begin(), in.key_positions.end());      // [B, keys]
  if (defective_) {
    for (int b = 0; b < batch; ++b) {
      for (int i = 0; i < tq; ++i) {
        int& p = q_pos[static_cast<size_t>(b) * tq + i];
        p = Position(call, b, call.query_slot(i), p, true);
      }
      for (int j = 0; j < keys; ++j) {
        int& p = k_pos[static_cast<size_t>(b) * keys + j];
        p = Position(call, b, j, p, false);
      }
    }
  }

  // q/k encoding
  std::vector<float> q(in.q.begin(), in.q.end()), k(in.k.begin(), in.k.end()), v(in.v.begin(), in.v.end());
  if (in.apply_positional) {
    if (c.encoding.kind == EncodingKind::kRope) {
      if (defective_) {
        const int length = CurrentLength(call, in);
        Rotate(c, length, q, batch, hq, tq, q_pos, true);
        Rotate(c, length, k, batch, hkv, keys, k_pos, false);
      } else {
        MutantAdapter::Rotate(c, in.current_length, q, batch, hq, tq, q_pos, true);
        MutantAdapter::Rotate(c, in.current_length, k, batch, hkv, keys, k_pos, false);
      }
    } else {
      ReferenceEncode(c, reference::Side::kQuery, q, batch, hq, tq, d, q_pos, in.current_length);
      ReferenceEncode(c, reference::Side::kKey, k, batch, hkv, keys, d, k_pos, in.current_length);
    }
  }
  if (defective_) TransformValues(c, in.current_length, v, in, keys, k_pos);

  // mask, then softmax attention per (b, h) with the owned bias added
  const std::vector<float> mask = Mask(call, in, std::move(given_mask));
  std::vector<float> biased;
  for (int b = 0; b < batch; ++b) {
    for (int h = 0; h < hq; ++h) {
      const int kv = defective_ ? KvHead(h, hq, hkv) : MutantAdapter::KvHead(h, hq, hkv);
      const float* mask_bh = mask.data() + static_cast<size_t>(b) * tq * keys;
      if (in.apply_bias) {
        biased.assign(mask_bh, mask_bh + static_cast<size_t>(tq) * keys);
        for (int i = 0; i < tq; ++i)
          for (int j = 0; j < keys; ++j) {
            float& m = biased[static_cast<size_t>(i) * keys + j];
            if (m == kNegInf) continue;
            const int qp = q_pos[static_cast<size_t>(b) * tq + i], kp = k_pos[static_cast<size_t>(b) * keys + j];
            const double bias = defective_ ? Bias(c, h, qp, kp) : MutantAdapter::Bias(c, h, qp, kp);
            m += static_cast<float>(bias);
          }
        mask_bh = biased.data();
      }
      Head head;
      head.q = q.data() + (static_cast<size_t>(b) * hq + h) * tq * d;
      head.k = k.data() + (static_cast<size_t>(b) * hkv + kv) * keys * d;
      head.v = v.data() + (static_cast<size_t>(b) * hkv + kv) * keys * dv;
      head.mask = mask_bh;
      head.tq = tq;
      head.tk = keys;
      head.head_dim = d;
      head.value_dim = dv;
      head.scale = in.scale;
      head.softcap = static_cast<float>(c.softcap);
      head.out = out.data() + (static_cast<size_t>(b) * hq + h) * tq * dv;
      if (defective_) {
        AttendHead(head);
      } else {
        MutantAdapter::AttendHead(head);
      }
    }
  }
}

void MutantAdapter::attention(const AttentionArgs& a) {
  Call call;
  call.spec = &a.spec;
  call.tq = a.tq;
  call.keys = a.tk;
  call.key_positions = a.key_positions;
  Inputs in;
  in.batch = a.batch;
  in.q_heads = a.q_heads;
  in.kv_heads = a.kv_heads;
  in.head_dim = a.head_dim;
  in.value_dim = a.value_dim;
  in.q = a.q;
  in.k = a.k;
  in.v = a.v;
  in.query_positions = a.query_positions;
  in.key_positions = a.key_positions;
  in.mask = a.mask;
  in.apply_positional = a.apply_positional;
  in.apply_bias = a.apply_bias;
  in.scale = static_cast<float>(a.scale);
  in.current_length = a.current_length;
  Run(call, in, a.out);
}

void MutantAdapter::rope(const RopeArgs& a) {
  std::vector<float> x(a.x.begin(), a.x.end());
  if (defective_) {
    Rotate(a.spec, a.current_length, x, a.batch, a.heads, a.tokens, a.positions, false);
  } else {
    MutantAdapter::Rotate(a.spec, a.current_length, x, a.batch, a.heads, a.tokens, a.positions, false);
  }
  std::copy(x.begin(), x.end(), a.out.begin());
}

std::unique_ptr<Session> MutantAdapter::open_session(const SessionArgs& args) {
  return std::make_unique<MutantSession>(*this, args);
}

}  // namespace attncheck::mutants
