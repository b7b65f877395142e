// A test adapter: another adapter's kernel under a contract edited by a function,
// to show that verdicts and probes follow what the contract says.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "adapters/adapter.h"
#include "adapters/registry.h"

namespace attncheck::test {

class ContractOverride final : public Adapter {
 public:
  // `refuse`, when given, skips a case with its reason before the inner adapter is asked.
  using Refusal = std::function<std::optional<std::string>(const Case&)>;
  ContractOverride(const std::string& inner, std::function<void(Capabilities&)> edit, Refusal refuse = {})
      : inner_(MakeAdapter(inner)), edit_(std::move(edit)), refuse_(std::move(refuse)) {}
  std::string name() const override { return inner_->name() + "+contract"; }
  std::string description() const override { return inner_->description(); }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    edit_(caps);
    return caps;
  }
  std::optional<std::string> unsupported(const Case& c) const override {
    if (refuse_) {
      if (std::optional<std::string> why = refuse_(c)) return why;
    }
    return inner_->unsupported(c);
  }
  void attention(const AttentionArgs& args) override { inner_->attention(args); }
  void rope(const RopeArgs& args) override { inner_->rope(args); }
  std::unique_ptr<Session> open_session(const SessionArgs& args) override { return inner_->open_session(args); }

 private:
  std::unique_ptr<Adapter> inner_;
  std::function<void(Capabilities&)> edit_;
  Refusal refuse_;
};

}  // namespace attncheck::test
