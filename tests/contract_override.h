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
  ContractOverride(const std::string& inner, std::function<void(Capabilities&)> edit)
      : inner_(MakeAdapter(inner)), edit_(std::move(edit)) {}
  std::string name() const override { return inner_->name() + "+contract"; }
  std::string description() const override { return inner_->description(); }
  Capabilities capabilities() const override {
    Capabilities caps = inner_->capabilities();
    edit_(caps);
    return caps;
  }
  std::optional<std::string> unsupported(const Case& c) const override { return inner_->unsupported(c); }
  void attention(const AttentionArgs& args) override { inner_->attention(args); }
  void rope(const RopeArgs& args) override { inner_->rope(args); }
  std::unique_ptr<Session> open_session(const SessionArgs& args) override { return inner_->open_session(args); }

 private:
  std::unique_ptr<Adapter> inner_;
  std::function<void(Capabilities&)> edit_;
};

}  // namespace attncheck::test
