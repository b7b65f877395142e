// Mutants of varlen and paged descriptor handling (issue: structured visibility):
// the tiled kernel given only FlashAttention's varlen forms (adapters/tiled,
// VarlenDescriptorForms), each with one slip in reading cu_seqlens or the block
// table, modelled on shipped bugs (adapters/descriptor_rule.h DescriptorSlips).
// Sessions are the base's (a padded KV cache, the padded batch's descriptor).
#include "adapters/descriptor_rule.h"
#include "adapters/mutants/mutant_base.h"
#include "adapters/tiled/tiled_adapter.h"

namespace attncheck::mutants {
namespace {

// The tiled varlen kernel (paged when page_size > 0); the slip on when defective.
template <auto Slip, int kPageSize>
class VarlenMutant final : public MutantAdapter {
 protected:
  void Adjust(Capabilities& caps) const override {
    caps.masks = {MaskConvention::kDescriptor};
    caps.descriptor_forms = adapters::VarlenDescriptorForms(kPageSize);
  }

 public:
  void attention(const AttentionArgs& args) override {
    TiledAttention(Dtype::kF32, args, defective() ? Slip() : adapters::DescriptorSlips{});
  }
};

adapters::DescriptorSlips CuSeqlensOffByOne() { return {.cu_seqlens_k_off_by_one = true}; }
adapters::DescriptorSlips BlockTableRow0() { return {.block_table_row0 = true}; }

}  // namespace

std::vector<MutantDef> VarlenMutants() {
  return {
      Def<VarlenMutant<CuSeqlensOffByOne, 0>>(
          "desc-cu-seqlens-off-by-one",
          "varlen keys of sequence s end at cu_seqlens_k[s + 1] + 1: the next sequence's first key is read",
          {"packed-isolation", "non-interference"}),
      Def<VarlenMutant<BlockTableRow0, 16>>("desc-block-table-row0",
                                            "paged K/V: every sequence reads block-table row 0 (sequence 0's pages)",
                                            {"packed-isolation", "non-interference"}),
  };
}

}  // namespace attncheck::mutants
