// Printer for `attncheck show` and test diagnostics: the layout and visibility of
// one batch row and one oracle attention row (softmax over the visible keys).
#include "reference/show.h"

#include <stdexcept>

#include <fmt/format.h>

#include "reference/attention.h"
#include "reference/descriptor.h"

namespace attncheck::reference {
namespace {

template <class Value>
std::string Joined(const std::vector<Value>& values, size_t first, size_t count) {
  std::string line;
  for (size_t n = 0; n < count; ++n) {
    if (n > 0) line += ' ';
    line += fmt::format("{}", values[first + n]);
  }
  return line;
}

}  // namespace

std::string Show(const Scenario& s, int row, int query) {
  if (row < 0 || row >= s.batch) throw std::out_of_range(fmt::format("row: {} not in [0, {})", row, s.batch));
  if (query < 0) query = s.tq - 1;
  if (query >= s.tq) throw std::out_of_range(fmt::format("query: {} not in [0, {})", query, s.tq));
  const size_t keys = static_cast<size_t>(row) * s.tk;     // first key of the row in [B, Tk]
  const size_t queries = static_cast<size_t>(row) * s.tq;  // first query of the row in [B, Tq]

  std::string text;
  text += fmt::format("case: {}\n", ToLine(s.c));
  text += fmt::format("batch row: {}\n", row);
  text += fmt::format("key positions: {}\n", Joined(s.key_positions, keys, static_cast<size_t>(s.tk)));
  text += fmt::format("query positions: {}\n", Joined(s.query_positions, queries, static_cast<size_t>(s.tq)));
  std::vector<int> valid(s.key_valid.begin() + static_cast<std::ptrdiff_t>(keys),
                         s.key_valid.begin() + static_cast<std::ptrdiff_t>(keys + static_cast<size_t>(s.tk)));
  text += fmt::format("key valid: {}\n", Joined(valid, 0, valid.size()));
  std::string documents;
  for (int j = 0; j < s.tk; ++j) {
    if (j > 0) documents += ' ';
    const int doc = s.key_doc[keys + static_cast<size_t>(j)];
    documents += doc < 0 ? std::string("-") : fmt::format("{}", doc);
  }
  text += fmt::format("documents: {}\n", documents);

  text += "visibility (rows = queries, 1 = visible):\n";
  for (int i = 0; i < s.tq; ++i) {
    std::string line;
    for (int j = 0; j < s.tk; ++j) {
      if (j > 0) line += ' ';
      line += s.is_visible(row, i, j) ? '1' : '0';
    }
    text += line + "\n";
  }

  std::vector<int> seen;
  for (int j = 0; j < s.tk; ++j) {
    if (s.is_visible(row, query, j)) seen.push_back(j);
  }
  if (seen.empty()) {
    text += fmt::format("row {} sees no key (all masked)\n", query);
  } else {
    text += fmt::format("row {} sees keys: {}\n", query, Joined(seen, 0, seen.size()));
  }

  const Scenario with_data = s.q.size() == 0 && s.c.q_heads > 0 && s.c.head_dim > 0 ? MakeScenario(s.c) : s;
  const std::vector<double> probabilities = AttentionProbabilities(with_data, row, 0, query);
  std::string attention;
  for (size_t j = 0; j < probabilities.size(); ++j) {
    if (j > 0) attention += ' ';
    attention += fmt::format("{:.4f}", probabilities[j]);
  }
  text += fmt::format("attention row {} (head 0): {}\n", query, attention);

  // What a FlashAttention-class kernel is given instead of the matrix above.
  const int page_size = s.c.page_size > 0 ? s.c.page_size : 4;  // the case's, when it names one
  const std::string paged = fmt::format("varlen, paged by {}", page_size);
  for (const auto& [form, forms] : {std::pair{std::string("padded batch"), FlashAttentionForms(false)},
                                    std::pair{paged, FlashAttentionForms(true, page_size)}}) {
    std::string why;
    const std::optional<VisibilityDescriptor> d = Describe(s.c, forms, &why);
    text += d ? fmt::format("descriptor ({}):\n{}", form, DescriptorText(*d))
              : fmt::format("descriptor ({}): none, {}\n", form, why);
  }
  return text;
}

}  // namespace attncheck::reference
