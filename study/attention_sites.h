#pragma once
// Finding a model's attention modules and attaching probes to them for a scope: what
// capture_attention and the interventions share.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "nn/attention_probe.h"
#include "nn/module.h"

namespace tapegrad::study {

// Every attention module (a ProbedAttention: the three MultiHeadAttention families) under root,
// by dotted module path, depth first in registration order; root itself is "" when it is one. A
// module registered under two paths is listed once, under its first.
template <class T>
std::vector<std::pair<std::string, nn::ProbedAttention<T>*>> named_attention_modules(nn::Module<T>& root);

// The module at `path` among named_attention_modules(root); ValueError naming `who`, the path and
// the known paths when there is none. When head is given, ValueError naming the path, the head and
// the module's head count unless head < attention_heads().
template <class T>
nn::ProbedAttention<T>& attention_module_at(nn::Module<T>& root, const std::string& path, const std::string& who);
template <class T>
nn::ProbedAttention<T>& attention_head_at(nn::Module<T>& root, const std::string& path, std::size_t head,
                                          const std::string& who);

// Probes attached for the lifetime of this object (detached by the destructor, so also when an
// exception unwinds through the scope). Either may be destroyed first: the destructor detaches
// only from modules still alive (ProbedAttention::lifetime).
template <class T>
class AttentionProbesGuard {
 public:
  AttentionProbesGuard() = default;
  ~AttentionProbesGuard();
  AttentionProbesGuard(const AttentionProbesGuard&) = delete;
  AttentionProbesGuard& operator=(const AttentionProbesGuard&) = delete;

  void attach(nn::ProbedAttention<T>& module, nn::AttentionProbe<T> probe);

 private:
  struct Attached {
    nn::ProbedAttention<T>* module;
    std::weak_ptr<const void> module_alive;
    std::uint64_t id;
  };
  std::vector<Attached> attached_;
};

extern template class AttentionProbesGuard<float>;
extern template class AttentionProbesGuard<double>;

}  // namespace tapegrad::study
