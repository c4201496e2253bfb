#include "study/attention_capture.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "autograd/core/tape.h"
#include "autograd/base/checks.h"
#include "study/attention_sites.h"

namespace tapegrad::study {

namespace {

// The tensors one record's arrays are read from after backward.
template <class T>
struct Pending {
  Tensor<T> scores, weights;
};

template <class T>
xt::xarray<T> grad_or_zeros(const Tensor<T>& t) {
  return t.has_grad() ? t.grad() : xt::xarray<T>(xt::zeros<T>(t.shape()));
}

// Per head h: sqrt(sum of g[b, h, i, j]^2 over may-attend cells).
template <class T>
std::vector<double> head_norms(const xt::xarray<T>& g, const Mask& may_attend) {
  const auto& s = g.shape();
  std::vector<double> out(s[1], 0.0);
  const T* p = g.data();
  for (std::size_t b = 0; b < s[0]; ++b)
    for (std::size_t h = 0; h < s[1]; ++h)
      for (std::size_t i = 0; i < s[2]; ++i)
        for (std::size_t j = 0; j < s[3]; ++j, ++p)
          if (may_attend(b, i, j)) out[h] += double(*p) * double(*p);
  for (double& n : out) n = std::sqrt(n);
  return out;
}

// What capture_attention needs of run_loss's result: a single-element loss recorded on its tape.
template <class T>
void require_recorded_loss(const Tensor<T>& loss) {
  require_defined(loss, "capture_attention", "the loss run_loss returned");
  if (loss.numel() != 1) {
    throw ValueError("capture_attention: run_loss must return a single-element loss, got shape " +
                     format_shape(loss.shape()));
  }
  if (!loss.requires_grad()) {
    throw ValueError("capture_attention: the loss run_loss returned (" + loss.describe() +
                     ") requires no gradient: nothing it depends on was recorded on capture_attention's tape. "
                     "run_loss must run the model's forward and compute the loss from its output, inside "
                     "run_loss, not under NoGradGuard and not detached");
  }
}

}  // namespace

template <class T>
SoftmaxBackwardCheck check_softmax_backward(const xt::xarray<T>& weights, const xt::xarray<T>& weights_grad,
                                            const xt::xarray<T>& scores_grad, const Mask& may_attend) {
  const Shape shape(weights.shape().begin(), weights.shape().end());
  const auto fail = [&](const std::string& what) {
    throw ShapeError("check_softmax_backward: " + what + " (weights " + format_shape(shape) + ", weights_grad " +
                     format_shape(weights_grad.shape()) + ", scores_grad " + format_shape(scores_grad.shape()) +
                     ", may_attend " + format_shape(may_attend.shape()) + ")");
  };
  if (shape.size() != 4) fail("weights must be [batch, heads, seq_q, seq_k]");
  if (Shape(weights_grad.shape().begin(), weights_grad.shape().end()) != shape ||
      Shape(scores_grad.shape().begin(), scores_grad.shape().end()) != shape) {
    fail("weights_grad and scores_grad must have the shape of weights");
  }
  if (Shape(may_attend.shape().begin(), may_attend.shape().end()) != Shape{shape[0], shape[2], shape[3]}) {
    fail("may_attend must be [batch, seq_q, seq_k]");
  }
  const std::size_t seq_k = shape[3];
  SoftmaxBackwardCheck out;
  out.tolerance = 8.0 * double(seq_k + 2) * double(std::numeric_limits<T>::epsilon());
  for (std::size_t b = 0; b < shape[0]; ++b) {
    for (std::size_t h = 0; h < shape[1]; ++h) {
      for (std::size_t i = 0; i < shape[2]; ++i) {
        const std::size_t row = ((b * shape[1] + h) * shape[2] + i) * seq_k;
        const T* a = weights.data() + row;
        const T* da = weights_grad.data() + row;
        const T* ds = scores_grad.data() + row;
        double dot = 0, abs_dot = 0, sum = 0, scale = 0;
        bool any_allowed = false;
        for (std::size_t j = 0; j < seq_k; ++j) {
          dot += double(a[j]) * da[j];
          abs_dot += std::abs(double(a[j]) * da[j]);
          sum += a[j];
          any_allowed = any_allowed || may_attend(b, i, j);
        }
        for (std::size_t j = 0; j < seq_k; ++j) scale = std::max(scale, std::abs(double(a[j])) * (std::abs(double(da[j])) + abs_dot));
        // A row whose every term is 0 has nothing to round: any deviation counts in full.
        const double unit = scale > 0 ? scale : 1.0;
        for (std::size_t j = 0; j < seq_k; ++j) {
          const double expected = double(a[j]) * (double(da[j]) - dot);
          out.identity_error = std::max(out.identity_error, std::abs(double(ds[j]) - expected) / unit);
          if (any_allowed && !may_attend(b, i, j)) out.masked_grad = std::max(out.masked_grad, std::abs(double(ds[j])));
        }
        if (any_allowed) {
          out.row_sum_error = std::max(out.row_sum_error, std::abs(sum - 1.0));
        } else {
          ++out.fully_masked_rows;
        }
      }
    }
  }
  // Written so that a NaN deviation fails.
  out.passed = out.identity_error <= out.tolerance && out.masked_grad == 0 && out.row_sum_error <= out.tolerance;
  return out;
}

template <class T>
const AttentionRecord<T>& AttentionCapture<T>::at(const std::string& name) const {
  std::string names;
  for (const auto& r : records) {
    if (r.name == name) return r;
    names += (names.empty() ? "'" : ", '") + r.name + "'";
  }
  throw ValueError("AttentionCapture::at: no record named '" + name + "' (records: " +
                   (names.empty() ? std::string("none") : names) + ")");
}

template <class T>
bool AttentionCapture<T>::checks_passed() const {
  return std::all_of(records.begin(), records.end(), [](const auto& r) { return r.check.passed; });
}

template <class T>
AttentionCapture<T> capture_attention(nn::Module<T>& model, const RunLoss<T>& run_loss) {
  AttentionCapture<T> capture;
  std::vector<Pending<T>> pending;
  std::map<std::string, std::size_t> latest;  // module path -> index of its latest record
  {
    AttentionProbesGuard<T> probes;
    for (auto& [path, module] : named_attention_modules(model)) {
      probes.attach(*module, [&, path = path](nn::AttentionStage stage, const Tensor<T>& x,
                                              const Mask& may_attend) -> std::optional<Tensor<T>> {
        // Keep the canonical tensor's gradient: the module continues from this very tensor.
        Tensor<T> kept = x;
        if (kept.requires_grad()) kept.retain_grad();
        if (stage == nn::AttentionStage::kScores) {
          AttentionRecord<T> r;
          const auto [it, first] = latest.try_emplace(path, capture.records.size());
          r.call = first ? 0 : capture.records[it->second].call + 1;
          it->second = capture.records.size();
          r.module = path;
          r.name = r.call == 0 ? path : path + "#" + std::to_string(r.call + 1);
          r.may_attend = may_attend;
          capture.records.push_back(std::move(r));
          pending.push_back({kept, {}});
        } else if (stage == nn::AttentionStage::kWeights) {
          pending[latest.at(path)].weights = kept;
        } else {
          capture.records[latest.at(path)].dropped_weights = x.value();
        }
        return std::nullopt;
      });
    }
    GradientTape tape;  // records also under a NoGradGuard (a tape made inside one does)
    const Tensor<T> loss = run_loss();
    require_recorded_loss(loss);
    capture.loss = double(loss.item());
    tape.backward(loss);
  }
  for (std::size_t n = 0; n < capture.records.size(); ++n) {
    AttentionRecord<T>& r = capture.records[n];
    r.scores = pending[n].scores.value();
    r.weights = pending[n].weights.value();
    r.scores_grad = grad_or_zeros(pending[n].scores);
    r.weights_grad = grad_or_zeros(pending[n].weights);
    r.scores_grad_norm = head_norms(r.scores_grad, r.may_attend);
    r.weights_grad_norm = head_norms(r.weights_grad, r.may_attend);
    r.check = check_softmax_backward(r.weights, r.weights_grad, r.scores_grad, r.may_attend);
  }
  return capture;
}

#define TAPEGRAD_INSTANTIATE_CAPTURE(T)                                                                        \
  template SoftmaxBackwardCheck check_softmax_backward(const xt::xarray<T>&, const xt::xarray<T>&,            \
                                                       const xt::xarray<T>&, const Mask&);                    \
  template struct AttentionCapture<T>;                                                                        \
  template AttentionCapture<T> capture_attention(nn::Module<T>&, const RunLoss<T>&);
TAPEGRAD_INSTANTIATE_CAPTURE(float)
TAPEGRAD_INSTANTIATE_CAPTURE(double)

}  // namespace tapegrad::study
