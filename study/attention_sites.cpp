#include "study/attention_sites.h"

#include <unordered_set>

namespace tapegrad::study {

namespace {

template <class T>
void collect(nn::Module<T>& m, const std::string& path, std::unordered_set<const nn::Module<T>*>& seen,
             std::vector<std::pair<std::string, nn::ProbedAttention<T>*>>& out) {
  if (!seen.insert(&m).second) return;
  if (auto* site = dynamic_cast<nn::ProbedAttention<T>*>(&m)) out.emplace_back(path, site);
  for (const auto& [name, child] : m.named_children()) collect(*child, path.empty() ? name : path + "." + name, seen, out);
}

}  // namespace

template <class T>
std::vector<std::pair<std::string, nn::ProbedAttention<T>*>> named_attention_modules(nn::Module<T>& root) {
  std::vector<std::pair<std::string, nn::ProbedAttention<T>*>> out;
  std::unordered_set<const nn::Module<T>*> seen;
  collect(root, "", seen, out);
  return out;
}

template <class T>
nn::ProbedAttention<T>& attention_module_at(nn::Module<T>& root, const std::string& path, const std::string& who) {
  const auto modules = named_attention_modules(root);
  std::string known;
  for (const auto& [name, site] : modules) {
    if (name == path) return *site;
    known += (known.empty() ? "'" : ", '") + name + "'";
  }
  throw ValueError(who + ": no attention module at '" + path + "' (the model's attention modules: " +
                   (known.empty() ? std::string("none") : known) + ")");
}

template <class T>
nn::ProbedAttention<T>& attention_head_at(nn::Module<T>& root, const std::string& path, std::size_t head,
                                          const std::string& who) {
  nn::ProbedAttention<T>& site = attention_module_at(root, path, who);
  if (head >= site.attention_heads()) {
    throw ValueError(who + ": head " + std::to_string(head) + " is out of range for '" + path + "', which has " +
                     std::to_string(site.attention_heads()) + " heads (0 to " +
                     std::to_string(site.attention_heads() - 1) + ")");
  }
  return site;
}

template <class T>
AttentionProbesGuard<T>::~AttentionProbesGuard() {
  for (const Attached& a : attached_) {
    if (!a.module_alive.expired()) a.module->remove_attention_probe(a.id);
  }
}

template <class T>
void AttentionProbesGuard<T>::attach(nn::ProbedAttention<T>& module, nn::AttentionProbe<T> probe) {
  attached_.push_back({&module, module.lifetime(), module.register_attention_probe(std::move(probe))});
}

#define TAPEGRAD_INSTANTIATE_ATTENTION_SITES(T)                                                                  \
  template std::vector<std::pair<std::string, nn::ProbedAttention<T>*>> named_attention_modules(nn::Module<T>&); \
  template nn::ProbedAttention<T>& attention_module_at(nn::Module<T>&, const std::string&, const std::string&);  \
  template nn::ProbedAttention<T>& attention_head_at(nn::Module<T>&, const std::string&, std::size_t,            \
                                                     const std::string&);                                        \
  template class AttentionProbesGuard<T>;
TAPEGRAD_INSTANTIATE_ATTENTION_SITES(float)
TAPEGRAD_INSTANTIATE_ATTENTION_SITES(double)

}  // namespace tapegrad::study
