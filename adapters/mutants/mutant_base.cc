// The kernel every mutant is built on (mutant_base.h): the eigen adapter's pieces
// (EigenAdditiveMask, EigenAttendHead, EigenRotate) in the eigen adapter's order:
//   positions → q/k encoding → mask (+ owned score bias) → per-(b, h) softmax·V.
// A session keeps the raw appended tokens and their positions and runs the same
// pipeline over the whole cache at every attend, so a hook sees the cache exactly
// as one call would (with the steps in Call::step_start).
#include "adapters/mutants/mutant_base.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "adapters/eigen/eigen_adapter.h"
#include "adapters/kv_cache.h"
#include "reference/mask.h"
#include "reference/positional.h"
#include "reference/visibility.h"

namespace attncheck::mutants {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

class MutantSession final : public Session {
 public:
  MutantSession(MutantAdapter& adapter, const SessionArgs& args)
      : adapter_(adapter), args_(args), layout_(reference::MakeLayout(*args.c)),
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
    call.c = args_.c;
    call.layout = &layout_;
    call.tq = tq;
    call.keys = cache_.length();
    call.step_start = step_start_;
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
  reference::Scenario layout_;
  adapters::KvCache<float> cache_;  // raw (unrotated) keys, values, positions
  std::vector<int> step_start_;     // [T]: the first slot of each slot's step
};

// x [B, H, T, D] through the reference's q/k encoding (sinusoidal, learned, xPos)
// in double, rounded back to float.
void ReferenceEncode(const Case& c, reference::Side side, std::vector<float>& x, int batch, int heads, int tokens,
                     int dim, std::span<const int> positions, int current_length) {
  TensorD t(batch, heads, tokens, dim);
  for (size_t e = 0; e < x.size(); ++e) t.data[e] = x[e];
  reference::ApplyPositional(c, side, t, positions, current_length);
  for (size_t e = 0; e < x.size(); ++e) x[e] = static_cast<float>(t.data[e]);
}

// The eigen adapter's conversion, with the fill of the case's dtype (the eigen
// adapter is f32 only; the f16 mutant's twin blocks the f16 fill the same way).
std::vector<float> DefaultMask(const Call& call, const MaskArgs& mask, size_t size) {
  if (!IsAdditive(mask.convention) || call.c->dtype == Dtype::kF32) return EigenAdditiveMask(mask, size);
  const float fill = static_cast<float>(reference::AdditiveFill(mask.convention, call.c->dtype));
  std::vector<float> additive(mask.additive.begin(), mask.additive.end());
  for (float& value : additive) value = value == fill ? kNegInf : value;
  return additive;
}

}  // namespace

int Call::StepStart(int slot) const {
  if (!step_start.empty()) return step_start[static_cast<size_t>(slot)];
  return tq < keys && slot >= keys - tq ? keys - tq : 0;
}

bool RealQuery(const Call& call, int b, int qs) { return call.doc(b, qs) >= 0; }

bool SameDocument(const Call& call, int b, int qs, int ks) {
  return RealQuery(call, b, qs) && call.valid(b, ks) && call.doc(b, ks) == call.doc(b, qs);
}

bool Task(const Call& call, int b, int qs, int ks) {
  return reference::TaskVisible(*call.c, call.row(b).prefix_len, qs, ks, call.pos_in_doc(b, qs),
                                call.pos_in_doc(b, ks));
}

bool CorrectVisible(const Call& call, int b, int qs, int ks) {
  return SameDocument(call, b, qs, ks) && Task(call, b, qs, ks);
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
  caps.queries_beyond_keys = false;  // Call's layout has no leading query slots
  Adjust(caps);
  return caps;
}

std::vector<float> MutantAdapter::ConvertMask(const Call& call, const MaskArgs& mask, size_t size) const {
  return DefaultMask(call, mask, size);
}

void MutantAdapter::Rotate(const Case& c, int current_length, std::span<float> x, int batch, int heads, int tokens,
                           std::span<const int> positions, bool query) {
  EigenRotate(c, current_length, x, batch, heads, tokens, positions, query);
}

double MutantAdapter::Bias(const Case& c, int head, int query_pos, int key_pos) const {
  return reference::ScoreBias(c, head, query_pos, key_pos);
}

void MutantAdapter::AttendHead(const Head& a) {
  EigenAttendHead(a.q, a.k, a.v, a.mask, a.tq, a.tk, a.head_dim, a.value_dim, a.scale, a.softcap, a.out);
}

std::vector<float> MutantAdapter::Mask(const Call& call, const Inputs& in) {
  const size_t size = static_cast<size_t>(in.batch) * call.tq * call.keys;
  if (!OwnsMask()) return defective_ ? ConvertMask(call, in.mask, size) : DefaultMask(call, in.mask, size);
  std::vector<float> mask(size);  // [B, tq, keys]
  size_t e = 0;
  for (int b = 0; b < in.batch; ++b)
    for (int i = 0; i < call.tq; ++i)
      for (int j = 0; j < call.keys; ++j, ++e) {
        const int qs = call.query_slot(i);
        const bool visible = defective_ ? Visible(call, b, qs, j) : CorrectVisible(call, b, qs, j);
        mask[e] = visible ? 0.0f : kNegInf;
      }
  return mask;
}

void MutantAdapter::Run(const Call& call, const Inputs& in, std::span<float> out) {
  const Case& c = *call.c;
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
  const std::vector<float> mask = Mask(call, in);
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
  const reference::Scenario layout = reference::MakeLayout(*a.c);
  Call call;
  call.c = a.c;
  call.layout = &layout;
  call.tq = a.tq;
  call.keys = a.tk;
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
    Rotate(*a.c, a.current_length, x, a.batch, a.heads, a.tokens, a.positions, false);
  } else {
    MutantAdapter::Rotate(*a.c, a.current_length, x, a.batch, a.heads, a.tokens, a.positions, false);
  }
  std::copy(x.begin(), x.end(), a.out.begin());
}

std::unique_ptr<Session> MutantAdapter::open_session(const SessionArgs& args) {
  return std::make_unique<MutantSession>(*this, args);
}

}  // namespace attncheck::mutants
