// Position mutants: a kernel that computes its own logical positions (the
// position_ids a model derives from the attention mask and the cache) with one
// classic mistake, from what it is handed: the positions, the mask (which key
// slots are padding: Call::KeyUsed) and its session's appends. The mask it
// attends with stays the harness's. Left-padding and packing shift every position of a document by the
// same amount, which a relative encoding (RoPE) cannot see: those two mutants list
// the absolute encodings (sinusoidal, learned table) where the bug shows.
#include "adapters/mutants/mutant_base.h"

namespace attncheck::mutants {
namespace {

// New tokens of a decode step (a later session append, or the last Tq slots of a
// Tq < Tk call) get positions 0, 1, … instead of continuing after the cache.
class DecodePositionRestart final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override { caps.encodings = {EncodingKind::kRope}; }
  int Position(const Call& call, int b, int slot, int given, bool) const override {
    const int start = call.StepStart(slot);
    return start > 0 && call.KeyUsed(b, slot) ? slot - start : given;
  }
};

// position_ids = arange over the padded row instead of cumsum(mask) − 1: every
// real token is shifted by its row's left padding (the leading key slots the mask
// hides from every query).
class LeftpadArangePositions final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.encodings = {EncodingKind::kSinusoidal, EncodingKind::kLearned};
  }
  int Position(const Call& call, int b, int slot, int given, bool) const override {
    return call.KeyUsed(b, slot) ? given + call.LeadingUnused(b) : given;
  }
};

// Packed documents keep their offset in the packed row as positions (no reset):
// the row's first real token's position, counted on over every slot after it.
class PackedNoPositionReset final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override {
    caps.encodings = {EncodingKind::kSinusoidal, EncodingKind::kLearned};
  }
  int Position(const Call& call, int b, int slot, int given, bool) const override {
    const int first = call.LeadingUnused(b);
    if (!call.KeyUsed(b, slot)) return given;
    return call.key_positions[static_cast<size_t>(b) * call.keys + first] + (slot - first);
  }
};

// Q rotated at the corrected positions, K at the raw column (cache slot) index.
class RopeQkPositionMismatch final : public MutantAdapter {
  void Adjust(Capabilities& caps) const override { caps.encodings = {EncodingKind::kRope}; }
  int Position(const Call&, int, int slot, int given, bool query) const override { return query ? given : slot; }
};

}  // namespace

std::vector<MutantDef> PositionMutants() {
  return {
      Def<DecodePositionRestart>("decode-position-restart",
                                 "decode-step tokens get positions 0, 1, ... instead of past_len + i",
                                 {"decode-consistency", "reference-agreement"}),
      Def<LeftpadArangePositions>("leftpad-arange-positions",
                                  "position ids = column index (arange) instead of cumsum(mask) - 1 under left padding",
                                  {"left-padding", "reference-agreement"}),
      Def<PackedNoPositionReset>("packed-no-position-reset",
                                 "packed documents keep their packed offsets as positions (no reset per document)",
                                 {"packed-isolation", "reference-agreement"}),
      Def<RopeQkPositionMismatch>("rope-qk-position-mismatch",
                                  "RoPE: Q rotated at the corrected positions, K at the raw column index",
                                  {"left-padding", "packed-isolation", "reference-agreement"}),
  };
}

}  // namespace attncheck::mutants
