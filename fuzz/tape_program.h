#pragma once
// The tape sequence fuzzer's input format, read by fuzz_tape_sequences.cpp and written by
// make_seed_corpus.cpp: a program of instructions, each an opcode byte (read % kOpcodeCount)
// followed by its argument bytes. Bytes past the end read as 0; the program stops after
// kMaxInstructions or at the end of the input.
//
//   leaf <shape> <values> <requires_grad>   shape % 4: [3], [2,3], [2,1], []; element i is
//                                            ((values + 5 i) % 17 - 8) / 8, in [-1, 1]
//   unary <slot> <op>                       op % 4: tanh, exp, neg, x * 0.5
//   binary <slot> <slot> <op>               op % 3: add, sub, mul (one slot twice: a tensor passed twice)
//   reduce <slot> <op>                      op % 3: sum, mean, sum over axis 0
//   push_tape <persistent>                  persistent & 1
//   pop_tape
//   hook <slot> <kind> <argument>           kind % kHookKindCount (HookKind); argument: the hook
//                                            a remover removes, the tape a clearer clears
//   remove_hook <hook>
//   backward <tape> <slot> <lent>           a target of more than one element gets a seed of ones,
//                                            lent (lent & 1) or moved in
//   gradient <tape> <slot> <count> <slot>... <flags>   1-2 sources; flags & 1: create_graph,
//                                            flags & 2: then the gradient of the first result's sum
//   retain_grad <slot>
//   zero_grad <slot>
//   clear_tape <tape>
//   throwing_op <slot>                      a custom op (identity forward) whose backward throws
//   unlisted_op <slot> <slot>               a custom op of the first slot whose backward also adds
//                                            into the second, which it does not list as an input
//   threads <slot> <count>                  count % 2 + 1 threads, each a backward of sum(leaf * 2)
//                                            on a tape of its own, at the same time
//
// A slot reads % the number of tensors made so far, a tape % the number of live tapes (innermost
// last), a hook % the number of hooks registered; an instruction with nothing to refer to is skipped.
#include <cstdint>
#include <initializer_list>
#include <string>

namespace tapegrad::fuzz {

enum Opcode : std::uint8_t {
  kLeaf,
  kUnary,
  kBinary,
  kReduce,
  kPushTape,
  kPopTape,
  kHook,
  kRemoveHook,
  kBackward,
  kGradient,
  kRetainGrad,
  kZeroGrad,
  kClearTape,
  kThrowingOp,
  kUnlistedOp,
  kThreads,
  kOpcodeCount
};

// Every hook leaves the gradient's value as it is (so that a walk's result can be compared with a
// walk without hooks), or throws.
enum HookKind : std::uint8_t {
  kArrayObserves,    // returns nullopt
  kArrayCopies,      // returns a copy of the gradient (a replacement, refused under create_graph)
  kTensorObserves,   // returns nullopt
  kTensorReturnsIt,  // returns the gradient tensor it was given
  kRemovesItself,
  kRemovesAnother,   // removes hook <argument> if it is still registered
  kRunsOwnBackward,  // makes a tape and a leaf of its own and runs a backward on them
  kThrows,           // throws tapegrad::ValueError
  kClearsTape,       // clears live tape <argument> (the walking one: TapeError)
  kHookKindCount
};

inline constexpr int kMaxInstructions = 48;

// A program written as bytes: opcodes and arguments in order.
inline std::string tape_program(std::initializer_list<int> bytes) {
  std::string out;
  for (int b : bytes) out.push_back(static_cast<char>(b));
  return out;
}

}  // namespace tapegrad::fuzz
