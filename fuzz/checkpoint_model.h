#pragma once
// The model behind the checkpoint seeds (make_seed_corpus.cpp saves it) and the one the
// safetensors fuzzer loads every parsable input into: parameters "0.weight" [2,3], "0.bias" [2],
// "2.weight" [2,2], and one generator (the dropout stream "1"), so that the fuzzer reaches the
// shape checks, the strict key checks and the generator-state parsing of load_checkpoint.
#include <memory>

#include "nn/containers.h"
#include "nn/dropout.h"
#include "nn/linear.h"

namespace tapegrad::fuzz {

template <class T>
std::shared_ptr<nn::Sequential<T>> checkpoint_model() {
  Generator gen(1);
  auto model = std::make_shared<nn::Sequential<T>>();
  model->push_back(std::make_shared<nn::Linear<T>>(3, 2, gen));
  model->push_back(std::make_shared<nn::Dropout<T>>(gen, 0.1));
  model->push_back(std::make_shared<nn::Linear<T>>(2, 2, gen, /*bias=*/false));
  return model;
}

}  // namespace tapegrad::fuzz
