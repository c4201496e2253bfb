// Rows of docs/bad-inputs.md, section "optim": Adam, AdamW, SGD, parameter groups, load_state,
// clip_grad_norm, schedules and LRScheduler.
#include "optim/adam.h"
#include "optim/clip.h"
#include "optim/schedule.h"
#include "optim/sgd.h"
#include "tests/bad_inputs/inputs.h"
#include "tests/bad_inputs/row.h"

namespace tapegrad::bad_inputs {
namespace {

using namespace tapegrad::optim;

NamedParameters<double> params() { return {{"w", leaf({2, 3})}}; }
Adam<double> adam(const AdamOptions& options) { return Adam<double>(params(), options); }
AdamW<double> adamw(const AdamWOptions& options) { return AdamW<double>(params(), options); }
SGD<double> sgd(const SGDOptions& options) { return SGD<double>(params(), options); }

// load_state of an Adam over `w` [2,3] with `state` as given.
void adam_load(const StateMap<double>& state) {
  Adam<double> opt(params());
  opt.load_state(state);
}

// load_state of an SGD with momentum 0.9 over `w` [2,3] with `state` as given.
void sgd_load(const StateMap<double>& state) {
  SGD<double> opt(params(), {.momentum = 0.9});
  opt.load_state(state);
}

xt::xarray<double> w_shaped() { return xt::zeros<double>({2, 3}); }
xt::xarray<double> step_count(double step) { return xt::xarray<double>(step); }

// An Adam over `w` [2,3] given `group` after construction.
void adam_add(ParamGroup<double> group) {
  auto w = leaf({2, 3});
  Adam<double> opt({{"w", w}});
  opt.add_param_group(std::move(group));
}

// An Adam over `w` stepped once, whose value is then given shape [3,3], with a gradient of that shape.
void step_after_reshape() {
  auto w = leaf({2, 3});
  Adam<double> opt({{"w", w}});
  w.node()->grad = w_shaped();
  opt.step();
  w.mutable_value() = xt::zeros<double>({3, 3});
  w.node()->grad = xt::zeros<double>({3, 3});
  opt.step();
}

// A scheduler over SGD(lr 0.1) with `factor`, stepped once.
void schedule_with(LrFactor factor) {
  SGD<double> opt(params(), {.lr = 0.1});
  LRScheduler<double> scheduler(opt, std::move(factor));
  scheduler.step();
}

// A gradient of `value` everywhere on a [2] leaf, clipped.
double clip_with(double value, double max_norm, double norm_type = 2.0) {
  auto w = leaf({2});
  w.node()->grad = xt::xarray<double>({value, value});
  return clip_grad_norm<double>({w}, max_norm, norm_type);
}

// ---- hyper-parameters -----------------------------------------------------------------------
BAD_INPUT_ROW(Optim, adam_negative_lr, ValueError, (adam({.lr = -1e-3})), "Adam", "lr", "-0.001")
BAD_INPUT_ROW(Optim, adam_nan_lr, ValueError, (adam({.lr = nan})), "Adam", "lr", "nan")
BAD_INPUT_ROW(Optim, adam_infinite_lr, ValueError, (adam({.lr = inf})), "Adam", "lr", "inf")
BAD_INPUT_ROW(Optim, adam_beta1_one, ValueError, (adam({.betas = {1.0, 0.999}})), "Adam", "betas", "(1, 0.999)")
BAD_INPUT_ROW(Optim, adam_negative_beta2, ValueError, (adam({.betas = {0.9, -0.1}})), "Adam", "betas", "-0.1")
BAD_INPUT_ROW(Optim, adam_nan_beta, ValueError, (adam({.betas = {nan, 0.999}})), "Adam", "betas", "nan")
BAD_INPUT_ROW(Optim, adam_negative_eps, ValueError, (adam({.eps = -1e-8})), "Adam", "eps", "-1e-08")
BAD_INPUT_ROW(Optim, adam_nan_eps, ValueError, (adam({.eps = nan})), "Adam", "eps", "nan")
BAD_INPUT_ROW(Optim, adam_infinite_eps, ValueError, (adam({.eps = inf})), "Adam", "eps", "inf")
BAD_INPUT_ROW(Optim, adam_negative_weight_decay, ValueError, (adam({.weight_decay = -0.1})), "Adam", "weight_decay",
              "-0.1")
BAD_INPUT_ROW(Optim, adam_infinite_weight_decay, ValueError, (adam({.weight_decay = inf})), "Adam", "weight_decay",
              "inf")
BAD_INPUT_ROW(Optim, adamw_negative_lr, ValueError, (adamw({.lr = -1.0})), "AdamW", "lr", "-1")
BAD_INPUT_ROW(Optim, adamw_beta2_one, ValueError, (adamw({.betas = {0.9, 1.0}})), "AdamW", "betas", "(0.9, 1)")
BAD_INPUT_ROW(Optim, adamw_nan_weight_decay, ValueError, (adamw({.weight_decay = nan})), "AdamW", "weight_decay", "nan")
BAD_INPUT_ROW(Optim, sgd_negative_lr, ValueError, (sgd({.lr = -0.1})), "SGD", "lr", "-0.1")
BAD_INPUT_ROW(Optim, sgd_infinite_lr, ValueError, (sgd({.lr = inf})), "SGD", "lr", "inf")
BAD_INPUT_ROW(Optim, sgd_negative_momentum, ValueError, (sgd({.momentum = -0.5})), "SGD", "momentum", "-0.5")
BAD_INPUT_ROW(Optim, sgd_nan_momentum, ValueError, (sgd({.momentum = nan})), "SGD", "momentum", "nan")
BAD_INPUT_ROW(Optim, sgd_nan_dampening, ValueError, (sgd({.dampening = nan})), "SGD", "dampening", "nan")
BAD_INPUT_ROW(Optim, sgd_nesterov_without_momentum, ValueError, (sgd({.nesterov = true})), "SGD", "nesterov",
              "momentum")
BAD_INPUT_ROW(Optim, sgd_negative_weight_decay, ValueError, (sgd({.weight_decay = -1.0})), "SGD", "weight_decay", "-1")

// ---- parameters and groups ------------------------------------------------------------------
BAD_INPUT_ROW(Optim, optimizer_no_parameters, ValueError, (Adam<double>(NamedParameters<double>{})), "Adam",
              "no parameters")
BAD_INPUT_ROW(Optim, optimizer_undefined_parameter, ValueError, (Adam<double>({{"w", undefined()}})), "Adam", "'w'",
              "undefined")
BAD_INPUT_ROW(Optim, optimizer_parameter_twice, ValueError, (SGD<double>({{"w", leaf({2})}, {"w", leaf({2})}})), "SGD",
              "'w'", "twice")
BAD_INPUT_ROW(Optim, optimizer_parameter_in_two_groups, ValueError,
              (Adam<double>(std::vector<ParamGroup<double>>{{{{"w", leaf({2})}}, 0.1, 0.0},
                                                            {{{"w", leaf({2})}}, 0.2, 0.0}})),
              "Adam", "'w'", "twice")
BAD_INPUT_ROW(Optim, optimizer_group_negative_lr, ValueError,
              (Adam<double>(std::vector<ParamGroup<double>>{{params(), -0.1, 0.0}})), "Adam", "group 0", "lr", "-0.1")
BAD_INPUT_ROW(Optim, optimizer_group_nan_weight_decay, ValueError,
              (SGD<double>(std::vector<ParamGroup<double>>{{params(), 0.1, nan}})), "SGD", "group 0", "weight_decay",
              "nan")
BAD_INPUT_ROW(Optim, add_param_group_tensor_under_second_name, ValueError, ([] {
                auto w = leaf({2});
                Adam<double> opt({{"w", w}});
                opt.add_param_group({{{"w_again", w}}, 0.1, 0.0});
              }()),
              "Adam", "'w' (group 0) and 'w_again' (group 1)", "one shared tensor")
BAD_INPUT_ROW(Optim, add_param_group_name_held, ValueError, (adam_add({{{"w", leaf({5})}}, 0.1, 0.0})), "Adam", "'w'",
              "twice")
BAD_INPUT_ROW(Optim, add_param_group_undefined_parameter, ValueError, (adam_add({{{"bias", undefined()}}, 0.1, 0.0})),
              "Adam", "'bias' (group 1)", "undefined")
BAD_INPUT_ROW(Optim, add_param_group_negative_lr, ValueError, (adam_add({{{"v", leaf({2})}}, -0.1, 0.0})), "Adam",
              "group 1", "lr", "-0.1")
BAD_INPUT_ROW(Optim, step_after_value_given_another_shape, ShapeError, (step_after_reshape()), "Adam::step", "'w'",
              "[3,3]", "'exp_avg'", "[2,3]")
BAD_INPUT_ROW(Optim, optimizer_step_after_lr_set_to_nan, ValueError, ([] {
                auto opt = sgd({});
                opt.param_groups()[0].lr = nan;
                opt.step();
              }()),
              "SGD", "group 0", "lr", "nan")

// ---- load_state ---------------------------------------------------------------------------
BAD_INPUT_ROW(Optim, load_state_unknown_parameter, ValueError, (adam_load({{"v.exp_avg", xt::zeros<double>({2, 3})}})),
              "load_state", "'v.exp_avg'", "names no parameter")
BAD_INPUT_ROW(Optim, load_state_wrong_shape, ShapeError, (adam_load({{"w.exp_avg", xt::zeros<double>({3, 2})}})),
              "load_state", "'w.exp_avg'", "[3,2]", "[2,3]")
BAD_INPUT_ROW(Optim, load_state_negative_step, ValueError, (adam_load({{"w.step", xt::xarray<double>(-1.0)}})),
              "load_state", "'w.step'", "-1")
BAD_INPUT_ROW(Optim, load_state_nan_step, ValueError, (adam_load({{"w.step", xt::xarray<double>(nan)}})), "load_state",
              "'w.step'", "nan")
BAD_INPUT_ROW(Optim, load_state_fractional_step, ValueError, (adam_load({{"w.step", xt::xarray<double>(2.5)}})),
              "load_state", "'w.step'", "2.5")
BAD_INPUT_ROW(Optim, load_state_step_not_0d, ShapeError, (adam_load({{"w.step", xt::zeros<double>({2})}})),
              "load_state", "'w.step'", "[2]", "[]")
BAD_INPUT_ROW(Optim, load_state_key_without_buffer, ValueError, (adam_load({{"w", xt::zeros<double>({2, 3})}})),
              "load_state", "'w'", "<parameter>.<buffer>")

BAD_INPUT_ROW(Optim, load_state_zero_step, ValueError, (adam_load({{"w.step", step_count(0.0)}})), "load_state",
              "'w.step'", ">= 1", "got 0")
BAD_INPUT_ROW(Optim, load_state_missing_step, ValueError,
              (adam_load({{"w.exp_avg", w_shaped()}, {"w.exp_avg_sq", w_shaped()}})), "Adam::load_state", "'w'",
              "no step ('w.step')")
BAD_INPUT_ROW(Optim, load_state_misspelt_buffer, ValueError,
              (adam_load({{"w.step", step_count(2.0)}, {"w.exp_avg", w_shaped()}, {"w.exp_avg_sqr", w_shaped()}})),
              "Adam::load_state", "'w'", "missing [exp_avg_sq], unknown [exp_avg_sqr]")
BAD_INPUT_ROW(Optim, load_state_sgd_state_into_adam, ValueError,
              (adam_load({{"w.step", step_count(2.0)}, {"w.momentum_buffer", w_shaped()}})), "Adam::load_state", "'w'",
              "Adam keeps [exp_avg, exp_avg_sq]", "unknown [momentum_buffer]", "another optimiser")
BAD_INPUT_ROW(Optim, load_state_step_only_into_adam, ValueError, (adam_load({{"w.step", step_count(2.0)}})),
              "Adam::load_state", "'w'", "missing [exp_avg, exp_avg_sq]")
BAD_INPUT_ROW(Optim, load_state_adam_state_into_sgd, ValueError,
              (sgd_load({{"w.step", step_count(2.0)}, {"w.exp_avg", w_shaped()}, {"w.exp_avg_sq", w_shaped()}})),
              "SGD::load_state", "'w'", "SGD keeps [momentum_buffer]", "unknown [exp_avg, exp_avg_sq]")

// ---- clip_grad_norm -------------------------------------------------------------------------
BAD_INPUT_ROW(Optim, clip_grad_norm_norm_type_one, ValueError, (clip_with(1.0, 1.0, 1.0)), "clip_grad_norm",
              "norm_type", "1")
BAD_INPUT_ROW(Optim, clip_grad_norm_negative_max_norm, ValueError, (clip_with(1.0, -1.0)), "clip_grad_norm", "max_norm",
              "-1")
BAD_INPUT_ROW(Optim, clip_grad_norm_nan_max_norm, ValueError, (clip_with(1.0, nan)), "clip_grad_norm", "max_norm",
              "nan")
BAD_INPUT_ROW(Optim, clip_grad_norm_negative_infinite_norm_type, ValueError, (clip_with(1.0, 1.0, -inf)),
              "clip_grad_norm", "norm_type", "-inf")
BAD_INPUT_ROW(Optim, clip_grad_norm_undefined_parameter, ValueError, (clip_grad_norm<double>({undefined()}, 1.0)),
              "clip_grad_norm", "parameter 0", "undefined")

// ---- schedules ----------------------------------------------------------------------------
BAD_INPUT_ROW(Optim, noam_zero_warmup, ValueError, (noam(32, 1.0, 0)), "noam", "warmup", "got 32 and 0")
BAD_INPUT_ROW(Optim, noam_zero_model_size, ValueError, (noam(0, 1.0, 10)), "noam", "model_size", "got 0 and 10")
BAD_INPUT_ROW(Optim, noam_negative_factor, ValueError, (noam(32, -1.0, 10)), "noam", "factor", "-1")
BAD_INPUT_ROW(Optim, noam_nan_factor, ValueError, (noam(32, nan, 10)), "noam", "factor", "nan")
BAD_INPUT_ROW(Optim, step_decay_zero_step_size, ValueError, (step_decay(0, 0.5)), "step_decay", "step_size")
BAD_INPUT_ROW(Optim, step_decay_negative_gamma, ValueError, (step_decay(10, -0.5)), "step_decay", "gamma", "-0.5")
BAD_INPUT_ROW(Optim, step_decay_nan_gamma, ValueError, (step_decay(10, nan)), "step_decay", "gamma", "nan")
BAD_INPUT_ROW(Optim, cosine_zero_total_steps, ValueError, (cosine(0)), "cosine", "total_steps")
BAD_INPUT_ROW(Optim, cosine_min_factor_above_one, ValueError, (cosine(10, 1.5)), "cosine", "min_factor", "1.5")
BAD_INPUT_ROW(Optim, cosine_nan_min_factor, ValueError, (cosine(10, nan)), "cosine", "min_factor", "nan")
BAD_INPUT_ROW(Optim, scheduler_empty_factor, ValueError, (schedule_with(LrFactor{})), "LRScheduler", "factor")
BAD_INPUT_ROW(Optim, scheduler_factor_gives_nan, ValueError,
              (schedule_with([](std::size_t s) { return s ? nan : 1.0; })), "LRScheduler", "step 1", "nan")
BAD_INPUT_ROW(Optim, scheduler_factor_gives_negative, ValueError,
              (schedule_with([](std::size_t s) { return 1.0 - 2.0 * s; })), "LRScheduler", "step 1", "-1")
BAD_INPUT_ROW(Optim, scheduler_last_lr_group_out_of_range, ValueError, ([] {
                auto opt = sgd({});
                LRScheduler<double>(opt, cosine(10)).last_lr(1);
              }()),
              "last_lr", "group 1", "1 group")

}  // namespace
}  // namespace tapegrad::bad_inputs
