// The kernel every mutant is built on (internal to adapters/mutants/): the eigen
// adapter's pipeline — positions, q/k encoding, mask, per-(batch, head) softmax
// attention, cached-decode session — with one virtual hook per place a classic
// bug lives. A mutant overrides the hook of its one defect; the base calls hooks
// only while the defect is on, so the defect-free twin runs the base defaults.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "adapters/adapter.h"
#include "adapters/mutants/mutants.h"

namespace attncheck::mutants {

// The mask value that blocks a key in every mutant's additive mask.
inline constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// One kernel call as a mutant sees it: what a kernel is told (the spec, the key
// positions handed over) and the visibility handed over, read into `given`
// [B, tq, keys] from the dense mask or the descriptor — never the case's rows,
// documents or visibility kind. Key slots are 0 … keys − 1, the queries the last
// tq. In a session keys is the cache length so far and step_start[slot] the first
// slot of the append that brought slot in; outside a session the last tq slots
// count as one new step when tq < keys (a decode call), else everything is one step.
struct Call {
  const KernelSpec* spec = nullptr;
  int tq = 0;
  int keys = 0;
  std::span<const int> step_start;     // sessions only: [keys]
  std::span<const int> key_positions;  // [B, keys] as handed over
  std::span<const uint8_t> given;      // [B, tq, keys]: 1 = the mask handed over lets the query see the key
  std::span<const uint8_t> key_used;   // [B, keys]: some query of the call sees the key (pads never are)

  int query_slot(int i) const { return keys - tq + i; }
  bool IsQuery(int slot) const { return slot >= keys - tq && slot < keys; }
  int StepStart(int slot) const;
  // What the handed mask says for query slot qs and key slot ks (false off the call).
  bool Given(int b, int qs, int ks) const;
  bool KeyUsed(int b, int ks) const { return key_used[static_cast<size_t>(b) * keys + ks] != 0; }
  bool QueryReal(int b, int qs) const;  // the query sees some key
  int LeadingUnused(int b) const;       // key slots before row b's first used key (its left padding)
};

// The buffers of one call (attention, or a session attend over the cache).
struct Inputs {
  int batch = 0, q_heads = 0, kv_heads = 0, head_dim = 0, value_dim = 0;
  std::span<const float> q;              // [B, Hq, tq, D] (not yet encoded when apply_positional)
  std::span<const float> k;              // [B, Hkv, keys, D]
  std::span<const float> v;              // [B, Hkv, keys, Dv]
  std::span<const int> query_positions;  // [B, tq]
  std::span<const int> key_positions;    // [B, keys]
  MaskArgs mask;                         // [B, tq, keys] in the declared convention
  bool apply_positional = false;
  bool apply_bias = false;
  float scale = 0.0f;
  int current_length = 1;
};

// One (batch, head) of the softmax attention, as EigenAttendHead takes it.
struct Head {
  const float* q = nullptr;     // [tq, D]
  const float* k = nullptr;     // [tk, D]
  const float* v = nullptr;     // [tk, Dv]
  const float* mask = nullptr;  // [tq, tk] additive, −inf = blocked
  int tq = 0, tk = 0, head_dim = 0, value_dim = 0;
  float scale = 0.0f, softcap = 0.0f;
  float* out = nullptr;         // [tq, Dv]
};

class MutantAdapter : public Adapter {
 public:
  void Configure(std::string name, std::string description, bool defective);

  std::string name() const override { return name_; }
  std::string description() const override { return description_; }
  // The eigen adapter's capabilities with encodings {none, rope} (so no score
  // bias is folded per head into the mask), then Adjust().
  Capabilities capabilities() const override;
  void attention(const AttentionArgs& args) override;
  void rope(const RopeArgs& args) override;
  std::unique_ptr<Session> open_session(const SessionArgs& args) override;

  // The pipeline shared by attention and session attends.
  void Run(const Call& call, const Inputs& in, std::span<float> out);

 protected:
  bool defective() const { return defective_; }

  // ---- hooks: the defaults are the correct kernel ----
  virtual void Adjust(Capabilities&) const {}
  // Own-mask mutants rebuild the mask from Visible(), which reads the handed one
  // (Call::Given and what follows from it) with the mutant's mistake.
  virtual bool OwnsMask() const { return false; }
  virtual bool Visible(const Call& call, int b, int qs, int ks) const { return call.Given(b, qs, ks); }
  // The mask handed over ([B, tq, keys]) as additive float, −inf = blocked
  // (default: EigenAdditiveMask, with the fill of the spec's dtype).
  virtual std::vector<float> ConvertMask(const Call& call, const MaskArgs& mask, size_t size) const;
  // Logical position of key slot `slot` of row b (query: the query at that slot);
  // `given` is the position the harness passed.
  virtual int Position(const Call&, int /*b*/, int /*slot*/, int given, bool /*query*/) const { return given; }
  // The current length L the RoPE scaling of this call reads (default: the one
  // the harness passed, the whole sequence's, in every call and decode step).
  virtual int CurrentLength(const Call&, const Inputs& in) const { return in.current_length; }
  // RoPE of x [B, H, T, D] in place (attention, sessions and the rope stage).
  virtual void Rotate(const KernelSpec& spec, int current_length, std::span<float> x, int batch, int heads, int tokens,
                      std::span<const int> positions, bool query);
  // After q and k are encoded: a chance to touch v [B, Hkv, keys, Dv].
  virtual void TransformValues(const KernelSpec&, int /*current_length*/, std::vector<float>& /*v*/,
                               const Inputs& /*in*/, int /*keys*/, std::span<const int> /*key_positions*/) {}
  // Score bias of query head h (owns_bias mutants).
  virtual double Bias(const KernelSpec& spec, int head, int query_pos, int key_pos) const;
  // The kv head query head h reads.
  virtual int KvHead(int h, int q_heads, int kv_heads) const { return h / (q_heads / kv_heads); }
  virtual void AttendHead(const Head& head);

 private:
  std::vector<float> Mask(const Call& call, const Inputs& in, std::vector<float> given);

  std::string name_, description_;
  bool defective_ = true;
};

// A mutant's entry: its info and a factory taking `defective`.
struct MutantDef {
  MutantInfo info;
  std::function<std::unique_ptr<MutantAdapter>()> make;
};

template <class T>
MutantDef Def(std::string name, std::string description, std::vector<std::string> laws) {
  return {{"mutant:" + std::move(name), std::move(description), std::move(laws)},
          [] { return std::make_unique<T>(); }};
}

// The mutants of each bug class (mask_mutants.cc, position_mutants.cc,
// rope_mutants.cc, numeric_mutants.cc, extreme_mutants.cc, descriptor_mutants.cc).
std::vector<MutantDef> MaskMutants();
std::vector<MutantDef> PositionMutants();
std::vector<MutantDef> RopeMutants();
std::vector<MutantDef> NumericMutants();
std::vector<MutantDef> ExtremeMutants();
std::vector<MutantDef> DescriptorMutants();
std::vector<MutantDef> VarlenMutants();  // varlen_mutants.cc
std::vector<MutantDef> BackwardMutants();  // backward_mutants.cc

}  // namespace attncheck::mutants
