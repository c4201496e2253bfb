// libFuzzer target: sequences of tape operations (format in tape_program.h). The input is a
// program over float64 tensors of shapes [3], [2,3], [2,1] and []: it makes leaves, runs pointwise
// ops, broadcasting binary ops and reductions under nested tapes (persistent or not), registers and
// removes gradient hooks (hooks that remove themselves or another, run a backward of their own,
// clear a tape or throw), runs backward and gradient (with create_graph, then a second gradient),
// retain_grad, zero_grad, clear, custom ops whose backward throws or adds into a tensor it did not
// list, and backward from two threads into one hooked leaf. Results larger than 16 in magnitude are
// not kept, so every value and gradient stays finite.
//
// Properties (a broken one prints the program so far and aborts, so libFuzzer keeps the input):
// - only tapegrad::Error escapes the API; ASan/UBSan report any bad memory access;
// - every hook leaves gradients as they are (or throws), so after a successful walk every gradient
//   equals a reference: the same graph recomputed from copies of its leaves, in the same order, on
//   a fresh tape without hooks, and differentiated with gradient(). The same ops in the same order
//   add the same contributions in the same order, so the comparison is exact, except where backward
//   adds into a leaf's earlier gradient: there the reference's sum is added at once and the walk's
//   terms one by one (or as a hooked leaf's total), a different association of the same terms, so
//   the two may differ by rounding: 1e-9 of the magnitudes, far above the few ulps such a
//   reassociation of a handful of terms bounded by 16 can cost, and far below a gradient lost or
//   counted twice;
// - a leaf gradient untouched by the walk stays as it was; an intermediate keeps a gradient only
//   when retained, also after a walk that threw; gradient() changes no grad() but a retained intermediate's; a lent seed is not
//   written;
// - a hook runs exactly once per walk that reaches its tensor (for gradient(), a leaf's hook only
//   when the leaf is a source), and never more than once in any walk;
// - an op's result requires a gradient exactly when an input does and a tape is recording;
// - removing a removed hook is a ValueError.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <typeinfo>
#include <vector>

#include "autograd/core/custom_op.h"
#include "autograd/ops/all.h"
#include "autograd/core/tape.h"
#include "fuzz/tape_program.h"

namespace {

using namespace tapegrad;
using namespace tapegrad::fuzz;
using Array = xt::xarray<double>;
using Grad = std::optional<Array>;

constexpr std::size_t kMaxSlots = 16;
constexpr std::size_t kMaxTapes = 4;
constexpr std::size_t kMaxHooks = 12;
constexpr double kBound = 16.0;  // a larger result is not kept, so exp(exp(...)) stays finite
constexpr double kReassociation = 1e-9;

const Shape kShapes[] = {{3}, {2, 3}, {2, 1}, {}};

enum class Op { leaf, tanh, exp, neg, half, add, sub, mul, sum, mean, sum_rows, throws_in_backward, adds_unlisted };
const char* const kOpNames[] = {"leaf", "tanh", "exp", "neg", "half", "add", "sub", "mul", "sum", "mean", "sum_rows",
                                "throws_in_backward", "adds_unlisted"};

// A custom op, identity forward, whose backward throws (the reference gets one that does not: a
// walk reaching it never succeeds).
Tensor<double> throws_in_backward(const Tensor<double>& x, bool reference) {
  if (reference) return custom_op("fuzz_identity", Array(x.value()), [x](const Tensor<double>& g) { add_gradient(x, g); }, x);
  return custom_op("fuzz_throws_in_backward", Array(x.value()),
                   [](const Tensor<double>&) { throw ValueError("fuzz_throws_in_backward: refused"); }, x);
}

// A custom op, identity forward, whose backward also adds its gradient into `other` (same shape),
// which it lists as an input only in the reference.
Tensor<double> adds_into(const Tensor<double>& x, const Tensor<double>& other, bool reference) {
  const auto backward = [x, other](const Tensor<double>& g) {
    add_gradient(x, g);
    add_gradient(other, g);
  };
  if (reference) return custom_op("fuzz_adds_into_listed", Array(x.value()), backward, x, other);
  return custom_op("fuzz_adds_into_unlisted", Array(x.value()), backward, x);
}

Tensor<double> apply(Op op, const Tensor<double>& a, const Tensor<double>& b, bool reference) {
  switch (op) {
    case Op::tanh: return tanh(a);
    case Op::exp: return exp(a);
    case Op::neg: return -a;
    case Op::half: return a * 0.5;
    case Op::add: return a + b;
    case Op::sub: return a - b;
    case Op::mul: return a * b;
    case Op::sum: return sum(a);
    case Op::mean: return mean(a);
    case Op::sum_rows: return sum(a, Axes{0});
    case Op::throws_in_backward: return throws_in_backward(a, reference);
    case Op::adds_unlisted: return adds_into(a, b, reference);
    case Op::leaf: break;
  }
  std::abort();
}

// The inputs whose requires_grad decides the result's (adds_unlisted does not list b).
bool lists_b(Op op) { return op == Op::add || op == Op::sub || op == Op::mul; }

struct Slot {
  Tensor<double> tensor;
  Op op = Op::leaf;
  std::size_t a = 0, b = 0;  // operands (b == a for ops of one tensor)
  bool recorded = false;     // an op result recorded on a tape; otherwise a leaf or a constant
  bool retained = false;
};

struct HookRecord {
  std::size_t slot = 0;
  std::uint64_t id = 0;
  HookKind kind = kArrayObserves;
  std::size_t argument = 0;
  std::atomic<bool> registered{true};
  std::atomic<bool> registered_at_walk_start{true};
  std::atomic<bool> removed_by_another{false};  // during the current walk
  std::atomic<bool> removed_itself{false};      // during the current walk
  std::atomic<int> calls{0};                    // in the current walk
};

std::string describe(const Grad& g) {
  if (!g) return "none";
  std::string s = format_shape(g->shape()) + " {";
  for (double v : *g) s += std::to_string(v) + " ";
  return s + "}";
}

bool close(const Array& a, const Array& b, const Array& scale) {
  if (a.shape() != b.shape()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::abs(a.data()[i] - b.data()[i]) > kReassociation * (1.0 + std::abs(scale.data()[i]) + std::abs(b.data()[i]))) return false;
  }
  return true;
}

class Program {
 public:
  explicit Program(std::string_view bytes) : bytes_(bytes) { slots_.reserve(kMaxSlots); }

  void run() {
    for (int step = 0; step < kMaxInstructions && pos_ < bytes_.size(); ++step) execute(static_cast<Opcode>(next() % kOpcodeCount));
  }
  // What ran, with the errors the API threw: "#2=mul(0,1) backward(#3) [backward threw: ...]".
  const std::string& trace() const { return trace_; }

 private:
  // ---- reading the program ----
  unsigned next() { return pos_ < bytes_.size() ? static_cast<unsigned char>(bytes_[pos_++]) : 0u; }
  std::optional<std::size_t> slot() {
    const unsigned b = next();
    if (slots_.empty()) return std::nullopt;
    return b % slots_.size();
  }
  // A live tape (0 the outermost), named in the trace as "tape<i>:".
  GradientTape* tape() {
    const unsigned b = next();
    if (tapes_.empty()) return nullptr;
    trace_ += "tape" + std::to_string(b % tapes_.size()) + ":";
    return tapes_[b % tapes_.size()].get();
  }

  // ---- properties ----
  [[noreturn]] void broken(const std::string& what) const {
    std::fprintf(stderr, "fuzz_tape_sequences: %s\n  program so far: %s\n", what.c_str(), trace_.c_str());
    std::abort();
  }

  // Runs an API call: true when it returned, false when it threw a tapegrad::Error.
  template <class F>
  bool attempt(const char* what, F&& f) {
    try {
      f();
      return true;
    } catch (const Error& e) {
      trace_ += std::string("[") + what + " threw: " + e.what() + "] ";
      return false;
    } catch (const std::exception& e) {
      broken(std::string(what) + " threw " + typeid(e).name() + ", not a tapegrad::Error: " + e.what());
    } catch (...) {
      broken(std::string(what) + " threw something that is not a std::exception");
    }
  }

  Grad grad_of(const Tensor<double>& t) const { return t.has_grad() ? Grad(t.grad()) : std::nullopt; }
  std::vector<Grad> grads() const {
    std::vector<Grad> all;
    for (const Slot& s : slots_) all.push_back(grad_of(s.tensor));
    return all;
  }

  // ---- making tensors ----
  void keep(Tensor<double> result, Op op, std::size_t a, std::size_t b) {
    const bool inputs_require = slots_[a].tensor.requires_grad() || (lists_b(op) && slots_[b].tensor.requires_grad());
    if (result.requires_grad() != (inputs_require && !tapes_.empty())) {
      broken(std::string(kOpNames[static_cast<int>(op)]) + "'s result requires_grad is " +
             (result.requires_grad() ? "true" : "false") + " with inputs that " + (inputs_require ? "do" : "do not") +
             " and " + std::to_string(tapes_.size()) + " tapes alive");
    }
    for (double v : result.value()) {
      if (!(std::abs(v) <= kBound)) return;
    }
    if (slots_.size() == kMaxSlots) return;
    trace_ += "#" + std::to_string(slots_.size()) + "=" + kOpNames[static_cast<int>(op)] + "(" + std::to_string(a) +
              (a == b ? "" : "," + std::to_string(b)) + ") ";
    const bool recorded = result.requires_grad();
    slots_.push_back({std::move(result), op, a, b, recorded});
  }

  void run_op(Op op, std::size_t a, std::size_t b) {
    Tensor<double> result;
    if (attempt(kOpNames[static_cast<int>(op)], [&] { result = apply(op, slots_[a].tensor, slots_[b].tensor, false); }))
      keep(std::move(result), op, a, b);
  }

  void make_leaf() {
    const Shape& shape = kShapes[next() % 4];
    const unsigned values = next();
    const bool requires_grad = next() & 1;
    if (slots_.size() == kMaxSlots) return;
    Array value = Array::from_shape(shape);
    for (std::size_t i = 0; i < value.size(); ++i) value.data()[i] = (static_cast<double>((values + 5 * i) % 17) - 8.0) / 8.0;
    trace_ += "#" + std::to_string(slots_.size()) + "=leaf" + format_shape(shape) + (requires_grad ? "rg " : " ");
    slots_.push_back({Tensor<double>(value, requires_grad), Op::leaf, 0, 0, false});
  }

  // ---- hooks ----
  std::optional<Array> on_array(HookRecord& h, const Array& g) {
    if (on_hook(h)) return Array(g);
    return std::nullopt;
  }
  // What every hook does besides returning; true for a hook that returns a replacement.
  bool on_hook(HookRecord& h) {
    ++h.calls;
    switch (h.kind) {
      case kRemovesItself:
        if (h.registered.exchange(false)) {
          h.removed_itself = true;
          slots_[h.slot].tensor.remove_hook(h.id);
        }
        break;
      case kRemovesAnother: {
        HookRecord& other = *hooks_[h.argument % hooks_.size()];
        if (other.registered.exchange(false)) {
          (&other == &h ? other.removed_itself : other.removed_by_another) = true;
          slots_[other.slot].tensor.remove_hook(other.id);
        }
        break;
      }
      case kRunsOwnBackward: {
        Tensor<double> z(Array{2.0}, true);
        GradientTape own;
        own.backward(sum(z * z * z));
        if (!z.has_grad() || z.grad() != Array{12.0}) broken("a hook's own backward of z^3 at 2 gave " + describe(grad_of(z)));
        break;
      }
      case kThrows: throw ValueError("fuzz hook: refused");
      case kClearsTape:
        if (!tapes_.empty()) tapes_[h.argument % tapes_.size()]->clear();
        break;
      default: break;
    }
    return h.kind == kArrayCopies;
  }

  void register_hook() {
    const auto s = slot();
    const auto kind = static_cast<HookKind>(next() % kHookKindCount);
    const unsigned argument = next();
    if (!s || hooks_.size() == kMaxHooks) return;
    auto record = std::make_unique<HookRecord>();
    HookRecord* h = record.get();
    h->slot = *s;
    h->kind = kind;
    h->argument = argument;
    Tensor<double>& t = slots_[*s].tensor;
    trace_ += "hook" + std::to_string(hooks_.size()) + "(#" + std::to_string(*s) + ",kind " + std::to_string(kind) + ") ";
    const bool registered = attempt("register_hook", [&] {
      if (kind == kTensorObserves || kind == kTensorReturnsIt) {
        h->id = t.register_hook([this, h](const Tensor<double>& g) -> std::optional<Tensor<double>> {
          on_hook(*h);
          if (h->kind == kTensorReturnsIt) return g;
          return std::nullopt;
        });
      } else {
        h->id = t.register_hook([this, h](const Array& g) { return on_array(*h, g); });
      }
    });
    if (registered != t.requires_grad()) broken("register_hook on a tensor that requires_grad is " + std::to_string(t.requires_grad()) + (registered ? " succeeded" : " threw"));
    if (registered) hooks_.push_back(std::move(record));
  }

  void remove_hook() {
    const unsigned b = next();
    if (hooks_.empty()) return;
    HookRecord& h = *hooks_[b % hooks_.size()];
    const bool was_registered = h.registered.exchange(false);
    trace_ += "remove_hook" + std::to_string(b % hooks_.size()) + " ";
    const bool removed = attempt("remove_hook", [&] { slots_[h.slot].tensor.remove_hook(h.id); });
    if (removed != was_registered) {
      broken(std::string("remove_hook of a hook that was ") + (was_registered ? "registered threw" : "removed already returned"));
    }
  }

  // ---- walks ----
  void start_walk() {
    for (auto& h : hooks_) {
      h->calls = 0;
      h->removed_by_another = false;
      h->removed_itself = false;
      h->registered_at_walk_start = h->registered.load();
    }
  }

  // Tensors a gradient from `target` reaches: through recorded ops, into inputs that require one.
  std::vector<bool> reached_from(std::size_t target) const {
    std::vector<bool> reached(slots_.size(), false);
    std::vector<std::size_t> todo;
    if (slots_[target].tensor.requires_grad()) todo.push_back(target);
    while (!todo.empty()) {
      const std::size_t i = todo.back();
      todo.pop_back();
      if (reached[i]) continue;
      reached[i] = true;
      if (!slots_[i].recorded) continue;
      for (std::size_t input : {slots_[i].a, slots_[i].b})
        if (slots_[input].tensor.requires_grad()) todo.push_back(input);
    }
    return reached;
  }

  // hook calls: once on each reached tensor whose hooks this walk runs, never more than once.
  // `runs(slot)` says whether this walk runs hooks on a tensor it reaches.
  template <class Runs>
  void check_hook_calls(const char* walk, const std::vector<bool>& reached, const Runs& runs, bool exact = true) const {
    for (std::size_t i = 0; i < hooks_.size(); ++i) {
      const HookRecord& h = *hooks_[i];
      if (!h.registered_at_walk_start) continue;
      const int calls = h.calls;
      const bool once = exact && !h.removed_by_another && h.slot < reached.size() && reached[h.slot] && runs(h.slot);
      if (calls > 1 || (exact && !h.removed_by_another && calls != (once ? 1 : 0))) {
        broken(std::string(walk) + ": hook" + std::to_string(i) + " on #" + std::to_string(h.slot) + " ran " +
               std::to_string(calls) + " times, expected " + (once ? "1" : (exact && !h.removed_by_another ? "0" : "at most 1")));
      }
    }
  }

  // gradient() leaves every grad() as it was, except a retained intermediate's: routing.h's table
  // keeps the walk's gradient there (as PyTorch 1.13's autograd.grad does), although core/tape.h says
  // gradient() changes no grad().
  // routing.h's table: a walk that throws leaves no gradient on an intermediate it does not retain.
  void check_cleared_after_throw(const char* walk) const {
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Grad now = grad_of(slots_[i].tensor);
      if (slots_[i].recorded && !slots_[i].retained && now)
        broken(std::string(walk) + " threw and left intermediate #" + std::to_string(i) + " a gradient, " + describe(now));
    }
  }

  void check_unchanged(const char* walk, const std::vector<Grad>& before) const {
    for (std::size_t i = 0; i < before.size(); ++i) {
      if (slots_[i].recorded && slots_[i].retained) continue;
      const Grad now = grad_of(slots_[i].tensor);
      if (now != before[i]) broken(std::string(walk) + " changed #" + std::to_string(i) + "'s grad() from " +
                                   describe(before[i]) + " to " + describe(now));
    }
  }

  // The same graph recomputed from copies of its leaves, in creation order, on a fresh tape.
  class Reference {
   public:
    Reference(const Program& program, const std::vector<std::size_t>& roots) : copies_(program.slots_.size()) {
      const auto& slots = program.slots_;
      std::vector<bool> needed(slots.size(), false);
      std::vector<std::size_t> todo(roots);
      while (!todo.empty()) {
        const std::size_t i = todo.back();
        todo.pop_back();
        if (needed[i]) continue;
        needed[i] = true;
        if (slots[i].recorded) todo.insert(todo.end(), {slots[i].a, slots[i].b});
      }
      for (std::size_t i = 0; i < slots.size(); ++i) {
        if (!needed[i]) continue;
        const Slot& s = slots[i];
        if (!s.recorded) {
          copies_[i] = Tensor<double>(Array(s.tensor.value()), s.tensor.requires_grad());
          continue;
        }
        copies_[i] = apply(s.op, copies_[s.a], copies_[s.b], true);
        if (copies_[i].value() != s.tensor.value()) program.broken("#" + std::to_string(i) + " recomputed differs");
      }
    }
    const Tensor<double>& operator[](std::size_t i) const { return copies_[i]; }
    std::vector<Tensor<double>> of(const std::vector<std::size_t>& slots) const {
      std::vector<Tensor<double>> out;
      for (std::size_t i : slots) out.push_back(copies_[i]);
      return out;
    }
    GradientTape& tape() { return tape_; }

   private:
    NoGradGuard pause_;             // the program's tapes do not record the reference
    GradientTape tape_{true};       // made under the guard, so it records
    std::vector<Tensor<double>> copies_;
  };

  // The reference's gradients; the program is broken when the reference throws.
  std::vector<Tensor<double>> reference_gradient(Reference& ref, const Tensor<double>& target,
                                                 const std::vector<Tensor<double>>& sources, bool create_graph) {
    try {
      return ref.tape().gradient(target.numel() == 1 ? target : sum(target), sources, {.create_graph = create_graph});
    } catch (const Error& e) {
      broken(std::string("the reference walk threw: ") + e.what());
    }
  }

  void backward() {
    GradientTape* tape = this->tape();
    const auto target = slot();
    const bool lent = next() & 1;
    if (!tape || !target) return;
    trace_ += "backward(#" + std::to_string(*target) + (lent ? ",lent) " : ") ");
    const Tensor<double>& output = slots_[*target].tensor;
    const std::vector<Grad> before = grads();
    start_walk();
    const Array ones = xt::ones<double>(output.shape());
    const bool ok = attempt("backward", [&] {
      if (output.numel() == 1) tape->backward(output);
      else if (lent) tape->backward(output, ones);
      else tape->backward(output, Array(ones));
    });
    if (ones != Array(xt::ones<double>(output.shape()))) broken("backward wrote into the seed it was lent");
    if (!ok) return check_cleared_after_throw("backward");
    const std::vector<bool> reached = reached_from(*target);
    check_hook_calls("backward", reached, [](std::size_t) { return true; });

    std::vector<std::size_t> sources;
    for (std::size_t i = 0; i < slots_.size(); ++i)
      if (reached[i] && (!slots_[i].recorded || slots_[i].retained)) sources.push_back(i);
    if (sources.empty()) return;
    Reference ref(*this, {*target});
    const auto expected = reference_gradient(ref, ref[*target], ref.of(sources), false);
    for (std::size_t k = 0; k < sources.size(); ++k) {
      const std::size_t i = sources[k];
      const Grad now = grad_of(slots_[i].tensor);
      const Array& want = expected[k].value();
      const bool right = now && (before[i] && !slots_[i].recorded ? close(*now, *before[i] + want, *before[i]) : *now == want);
      if (!right) {
        broken("backward: #" + std::to_string(i) + "'s grad() is " + describe(now) + ", before " + describe(before[i]) +
               ", the reference walk gives " + describe(want));
      }
    }
    for (std::size_t i = 0; i < slots_.size(); ++i) {
      const Grad now = grad_of(slots_[i].tensor);
      if (!reached[i] && !slots_[i].recorded && now != before[i]) {
        broken("backward: #" + std::to_string(i) + ", which the walk does not reach, changed from " + describe(before[i]) + " to " + describe(now));
      }
      if (reached[i] && slots_[i].recorded && !slots_[i].retained && now) {
        broken("backward: intermediate #" + std::to_string(i) + " kept a gradient, " + describe(now));
      }
    }
  }

  void gradient() {
    GradientTape* tape = this->tape();
    const auto target = slot();
    const unsigned count = next() % 2 + 1;
    std::vector<std::size_t> sources;
    for (unsigned k = 0; k < count; ++k) {
      if (const auto s = slot()) sources.push_back(*s);
    }
    const unsigned flags = next();
    const bool create_graph = flags & 1, second = flags & 2;
    if (!tape || !target) return;
    trace_ += "gradient(#" + std::to_string(*target) + " wrt";
    for (std::size_t s : sources) trace_ += " #" + std::to_string(s);
    trace_ += create_graph ? (second ? ", create_graph, second) " : ", create_graph) ") : ") ";

    std::vector<Tensor<double>> source_tensors;
    for (std::size_t s : sources) source_tensors.push_back(slots_[s].tensor);
    const std::vector<Grad> before = grads();
    start_walk();
    std::vector<Tensor<double>> got;
    if (!attempt("gradient", [&] { got = tape->gradient(slots_[*target].tensor, source_tensors, {.create_graph = create_graph}); }))
      return check_cleared_after_throw("gradient");
    check_unchanged("gradient", before);
    const std::vector<bool> reached = reached_from(*target);
    const auto is_source = [&](std::size_t i) { return std::find(sources.begin(), sources.end(), i) != sources.end(); };
    const bool leaf_target = !slots_[*target].recorded;
    check_hook_calls("gradient", reached, [&](std::size_t i) { return slots_[i].recorded || is_source(i); }, !leaf_target);

    // The real second walk before the reference: its NoGradGuard would keep the program's tapes
    // from recording sum(got[0]).
    std::vector<Tensor<double>> got2;
    bool second_ran = false;
    if (create_graph && second) {
      start_walk();
      second_ran = attempt("second gradient", [&] { got2 = tape->gradient(sum(got[0]), source_tensors); });
      if (second_ran) {
        check_unchanged("second gradient", before);
        check_hook_calls("second gradient", reached, [](std::size_t) { return true; }, false);
      }
    }

    std::vector<std::size_t> roots(sources);
    roots.push_back(*target);
    Reference ref(*this, roots);
    const auto expected = reference_gradient(ref, ref[*target], ref.of(sources), create_graph);
    compare_results("gradient", got, expected);
    if (second_ran) compare_results("second gradient", got2, reference_gradient(ref, sum(expected[0]), ref.of(sources), false));
  }

  void compare_results(const char* walk, const std::vector<Tensor<double>>& got, const std::vector<Tensor<double>>& expected) const {
    if (got.size() != expected.size()) broken(std::string(walk) + " returned " + std::to_string(got.size()) + " gradients");
    for (std::size_t k = 0; k < got.size(); ++k) {
      if (got[k].value() != expected[k].value()) {
        broken(std::string(walk) + ": result " + std::to_string(k) + " is " + describe(got[k].value()) +
               ", the reference walk gives " + describe(expected[k].value()));
      }
    }
  }

  // count threads, each running backward(sum(leaf * 2)) on a tape of its own, at the same time.
  void threads() {
    const auto s = slot();
    const unsigned count = next() % 2 + 1;
    if (!s || slots_[*s].recorded || !slots_[*s].tensor.requires_grad()) return;
    trace_ += "threads(#" + std::to_string(*s) + " x" + std::to_string(count) + ") ";
    const Tensor<double>& leaf = slots_[*s].tensor;
    const Grad before = grad_of(leaf);
    start_walk();
    std::atomic<int> failed{0};
    std::vector<std::thread> workers;
    for (unsigned k = 0; k < count; ++k) {
      workers.emplace_back([&] {
        try {
          GradientTape own;
          own.backward(sum(leaf * 2.0));
        } catch (const Error&) {
          ++failed;  // a throwing hook, or one clearing a tape
        } catch (...) {
          broken("a thread's backward threw something that is not a tapegrad::Error");
        }
      });
    }
    for (auto& w : workers) w.join();
    if (failed != 0) return;
    const Array total = xt::full_like(leaf.value(), 2.0 * count);
    const Grad now = grad_of(leaf);
    if (!now || !(before ? close(*now, *before + total, *before) : *now == total)) {
      broken("threads: the leaf's grad() is " + describe(now) + ", before " + describe(before) + ", expected " +
             std::to_string(count) + " x 2 more");
    }
    for (std::size_t i = 0; i < hooks_.size(); ++i) {
      const HookRecord& h = *hooks_[i];
      if (!h.registered_at_walk_start || h.removed_by_another) continue;
      const int calls = h.calls;
      const bool on_leaf = h.slot == *s;
      const bool right = !on_leaf ? calls == 0 : h.removed_itself ? calls >= 1 && calls <= int(count) : calls == int(count);
      if (!right) broken("threads: hook" + std::to_string(i) + " ran " + std::to_string(calls) + " times for " + std::to_string(count) + " walks");
    }
  }

  // <slot> <op>: op % count picks one of the `count` ops of one tensor from `first` on.
  void one_tensor_op(Op first, unsigned count) {
    const auto a = slot();
    const Op op = static_cast<Op>(static_cast<int>(first) + next() % count);
    if (a) run_op(op, *a, *a);
  }

  void execute(Opcode opcode) {
    switch (opcode) {
      case kLeaf: return make_leaf();
      case kUnary: return one_tensor_op(Op::tanh, 4);
      case kBinary: {
        const auto a = slot(), b = slot();
        const Op op = static_cast<Op>(static_cast<int>(Op::add) + next() % 3);
        if (a && b) run_op(op, *a, *b);
        return;
      }
      case kReduce: return one_tensor_op(Op::sum, 3);
      case kPushTape: {
        const bool persistent = next() & 1;
        if (tapes_.size() == kMaxTapes) return;
        tapes_.push_back(std::make_unique<GradientTape>(persistent));
        trace_ += persistent ? "push_tape(persistent) " : "push_tape ";
        return;
      }
      case kPopTape:
        if (!tapes_.empty()) {
          tapes_.pop_back();
          trace_ += "pop_tape ";
        }
        return;
      case kHook: return register_hook();
      case kRemoveHook: return remove_hook();
      case kBackward: return backward();
      case kGradient: return gradient();
      case kRetainGrad:
        if (const auto a = slot()) {
          trace_ += "retain_grad(#" + std::to_string(*a) + ") ";
          if (attempt("retain_grad", [&] { slots_[*a].tensor.retain_grad(); })) slots_[*a].retained = true;
        }
        return;
      case kZeroGrad:
        if (const auto a = slot()) {
          trace_ += "zero_grad(#" + std::to_string(*a) + ") ";
          attempt("zero_grad", [&] { slots_[*a].tensor.zero_grad(); });
        }
        return;
      case kClearTape:
        if (GradientTape* t = tape()) {
          trace_ += "clear_tape ";
          attempt("clear", [&] { t->clear(); });
        }
        return;
      case kThrowingOp:
        if (const auto a = slot()) run_op(Op::throws_in_backward, *a, *a);
        return;
      case kUnlistedOp: {
        const auto a = slot(), b = slot();
        if (a && b && slots_[*a].tensor.shape() == slots_[*b].tensor.shape()) run_op(Op::adds_unlisted, *a, *b);
        return;
      }
      case kThreads: return threads();
      case kOpcodeCount: break;
    }
  }

  std::string_view bytes_;
  std::size_t pos_ = 0;
  std::string trace_;
  // Destroyed in reverse: tapes first, then tensors, then the hook records their hooks point to.
  std::vector<std::unique_ptr<HookRecord>> hooks_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<GradientTape>> tapes_;
};

}  // namespace

// FUZZ_TAPE_TRACE=1 prints each input's program as it ran (to read a corpus file or a crash).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Program program(std::string_view(reinterpret_cast<const char*>(data), size));
  program.run();
  if (std::getenv("FUZZ_TAPE_TRACE")) std::fprintf(stderr, "%s\n", program.trace().c_str());
  return 0;
}
