// Mutants of varlen and paged descriptor handling (issue: structured visibility):
// the tiled kernel given only FlashAttention's varlen forms (adapters/tiled,
// VarlenDescriptorForms), each with one slip in reading cu_seqlens or the block
// table or in computing ALiBi slopes from max_bias, modelled on shipped bugs
// (adapters/descriptor_rule.h DescriptorSlips). Sessions are the base's (a padded
// KV cache, the padded batch's descriptor), where the cu_seqlens and block-table
// slips cannot occur; the ALiBi mutant has none (its slip would be there too). The
// decode slip shows in decode-consistency's steps over a caller-owned paged cache.
#include "adapters/descriptor_rule.h"
#include "adapters/mutants/mutant_base.h"
#include "adapters/tiled/tiled_adapter.h"

namespace attncheck::mutants {
namespace {

// The tiled varlen kernel (paged when page_size > 0, ALiBi from ggml's max_bias
// form when kMaxBias); the slip on when defective.
template <auto Slip, int kPageSize, bool kMaxBias = false>
class VarlenMutant final : public MutantAdapter {
 protected:
  void Adjust(Capabilities& caps) const override {
    caps.masks = {MaskConvention::kDescriptor};
    caps.descriptor_forms = adapters::VarlenDescriptorForms(kPageSize);
    caps.descriptor_forms.alibi = false;
    caps.many_heads = 40;  // head counts such as 12, 20, 24 (slopes past a power of two)
    if (kMaxBias) {
      caps.descriptor_forms.alibi_max_bias = caps.owns_bias = true;
      caps.encodings = {EncodingKind::kAlibi};
      caps.has_session = false;
    }
  }

 public:
  void attention(const AttentionArgs& args) override {
    TiledAttention(Dtype::kF32, args, defective() ? Slip() : adapters::DescriptorSlips{});
  }
};

adapters::DescriptorSlips CuSeqlensOffByOne() { return {.cu_seqlens_k_off_by_one = true}; }
adapters::DescriptorSlips BlockTableRow0() { return {.block_table_row0 = true}; }
adapters::DescriptorSlips AlibiPow2() { return {.alibi_pow2 = true}; }
adapters::DescriptorSlips DecodeFullPagesOnly() { return {.decode_full_pages_only = true}; }

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
      Def<VarlenMutant<DecodeFullPagesOnly, 16>>(
          "desc-paged-decode-full-pages",
          "paged K/V: a one-query sequence over more keys (a decode step) reads its full pages only, dropping a partly "
          "filled last page",
          {"decode-consistency"}),
      Def<VarlenMutant<AlibiPow2, 0, true>>(
          "desc-alibi-pow2-slopes",
          "ALiBi slopes from max_bias as if the head count were a power of two (ggml's m = 2^floor(log2 H) taken as H)",
          {"reference-agreement"}),
  };
}

}  // namespace attncheck::mutants
