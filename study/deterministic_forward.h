#pragma once
// Patching compares forwards of one model: each must compute the same function, so no dropout
// may draw masks in them.
#include <string>

#include "autograd/base/errors.h"
#include "nn/dropout.h"
#include "nn/module.h"

namespace tapegrad::study {

// ValueError naming `who` and the first module whose dropout is active (training mode, p > 0):
// two forwards would draw different masks, and a patched run would differ from its target by
// more than the patch.
template <class T>
void require_deterministic_forward(nn::Module<T>& model, const std::string& who) {
  for (const auto& [path, module] : model.named_modules()) {
    const auto* dropout = dynamic_cast<const nn::Dropout<T>*>(module);
    if (dropout == nullptr || !dropout->active()) continue;
    throw ValueError(who + ": dropout is active in '" + (path.empty() ? std::string("the model") : path) +
                     "' (training mode, p > 0): two forwards would draw different masks and a patch would not be "
                     "the only difference between them; call model.eval() first");
  }
}

}  // namespace tapegrad::study
