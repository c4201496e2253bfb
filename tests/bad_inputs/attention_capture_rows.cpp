// Rows of docs/bad-inputs.md, section "nn and study: attention probes, capture_attention and interventions".
#include "autograd/ops/reduce.h"
#include "autograd/core/tape.h"
#include "study/attention_capture.h"
#include "study/attention_intervention.h"
#include "nn/labml/multi_head_attention.h"
#include "nn/mha/multi_head_attention.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

using namespace tapegrad::nn;
using Labml = nn::labml::MultiHeadAttention<double>;

// A probe that returns the scores summed over the batch: the wrong shape.
std::optional<Tensor<double>> wrong_shape_probe(AttentionStage, const Tensor<double>& x, const Mask&) {
  return sum(x, {0});
}

BAD_INPUT_ROW(Nn, attention_probe_empty, ValueError, (Labml(2, 4, gen()).register_attention_probe({})),
              "MultiHeadAttention(heads=2, d_model=4)", "register_attention_probe", "empty")
BAD_INPUT_ROW(Nn, attention_probe_remove_unknown, ValueError, (Labml(2, 4, gen()).remove_attention_probe(0)),
              "MultiHeadAttention(heads=2, d_model=4)", "no probe with id 0")
BAD_INPUT_ROW(Nn, attention_probe_wrong_shape, ShapeError, ([] {
                Labml mha(2, 4, gen());
                mha.register_attention_probe(wrong_shape_probe);
                mha(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}));
              }()),
              "MultiHeadAttention(heads=2, d_model=4)", "scores [1,2,3,3]", "[2,3,3]")
BAD_INPUT_ROW(Nn, attention_probe_mha_per_head_mask, ValueError, ([] {
                nn::mha::MultiHeadAttention<double> mha(4, 2, gen());
                mha.register_attention_probe([](AttentionStage, const Tensor<double>&, const Mask&) {
                  return std::optional<Tensor<double>>();
                });
                mha(zeros({1, 3, 4}), zeros({1, 3, 4}), zeros({1, 3, 4}), AttendMask(Mask(xt::ones<bool>({1, 2, 3, 3}))));
              }()),
              "MultiHeadAttention(d_model=4, n_heads=2)", "same for every head", "[1,2,3,3]")
BAD_INPUT_ROW(Nn, capture_attention_loss_not_scalar, ValueError, ([] {
                Labml mha(2, 4, gen());
                study::capture_attention(mha, [&] { return mha(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4})); });
              }()),
              "capture_attention", "single-element", "[3,1,4]")
// The loss ignores the model: nothing it depends on was recorded (backward's own message would
// name backward, not what capture_attention needs).
BAD_INPUT_ROW(Nn, capture_attention_constant_loss, ValueError, ([] {
                Labml mha(2, 4, gen());
                study::capture_attention(mha, [] { return zeros({}); });
              }()),
              "capture_attention", "requires no gradient", "run_loss must run the model's forward")
BAD_INPUT_ROW(Nn, check_softmax_backward_mask_shape, ShapeError,
              (study::check_softmax_backward<double>(xt::zeros<double>({1, 2, 3, 3}), xt::zeros<double>({1, 2, 3, 3}),
                                                     xt::zeros<double>({1, 2, 3, 3}), Mask(xt::ones<bool>({3, 3})))),
              "check_softmax_backward", "may_attend", "[3,3]", "[1,2,3,3]")
BAD_INPUT_ROW(Nn, intervention_unknown_module, ValueError,
              ([] { Labml mha(2, 4, gen()); study::AttentionInterventions<double>(mha).ablate("encoder", 0); }()),
              "AttentionInterventions::ablate", "'encoder'", "''")
BAD_INPUT_ROW(Nn, intervention_head_out_of_range, ValueError,
              ([] { Labml mha(2, 4, gen()); study::AttentionInterventions<double>(mha).scale("", 2, 0.5); }()),
              "AttentionInterventions::scale", "head 2", "2 heads")
BAD_INPUT_ROW(Nn, intervention_scale_factor_not_0d, ShapeError,
              ([] { Labml mha(2, 4, gen()); study::AttentionInterventions<double>(mha).scale("", 0, zeros({2})); }()),
              "AttentionInterventions::scale", "factor", "[2]")
BAD_INPUT_ROW(Nn, intervention_replace_wrong_shape, ShapeError, ([] {
                Labml mha(2, 4, gen());
                study::AttentionInterventions<double> edits(mha);
                edits.replace("", 0, zeros({1, 3, 2}));
                mha(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4}));
              }()),
              "AttentionInterventions::replace", "head 0", "[1,3,2]", "[1,3,3]")
BAD_INPUT_ROW(Nn, loss_change_loss_not_scalar, ValueError, ([] {
                Labml mha(2, 4, gen());
                study::loss_change(mha, [&] { return mha(zeros({3, 1, 4}), zeros({3, 1, 4}), zeros({3, 1, 4})); },
                                   [](study::AttentionInterventions<double>&) {});
              }()),
              "loss_change", "single-element", "[3,1,4]")

}  // namespace
}  // namespace tapegrad::bad_inputs
