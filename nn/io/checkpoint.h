#pragma once
// Checkpoint I/O: safetensors files (the format PyTorch, JAX and Hugging Face read), whole-model
// training checkpoints on top of them, and NumPy .npy files for one tensor.
//
// safetensors layout (https://github.com/huggingface/safetensors):
//   bytes [0, 8)        N, the header length, unsigned 64-bit little-endian
//   bytes [8, 8+N)      a JSON object: for each tensor
//                         "name": {"dtype": "F32"|"F64", "shape": [d0, d1, ...], "data_offsets": [begin, end]}
//                       plus an optional "__metadata__": {"key": "value", ...} of strings only;
//                       padded with spaces so the data starts 8-byte aligned
//   bytes [8+N, EOF)    the data buffer: each tensor row-major, little-endian, at [begin, end)
//                       relative to the buffer's start; tensors tile the buffer exactly (no
//                       holes, no overlaps, nothing after the last one)
// Tensors are written in name order. A 0-d tensor has shape [] and one element.
//
// Every write is atomic (nn/io/atomic_file.h says how): a failed save (full disk, killed process,
// ...) leaves any previous file at <path> untouched, and a reader never sees half a file.
//
// Every reader check throws tapegrad::ValueError naming the function, the file and the problem,
// e.g. load_safetensors('run/ckpt.safetensors'): tensor 'fc.weight' has shape [4,3] of F32 (48
// bytes) but data_offsets [0,40] hold 40 bytes. Write failures throw ValueError too (the
// message carries the OS error).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nn/module.h"

namespace tapegrad::nn {

// The element types a file may hold: 32- and 64-bit IEEE floats.
enum class Dtype { F32, F64 };
// "F32" / "F64", as spelled in the safetensors header.
std::string dtype_name(Dtype dtype);

using Metadata = std::map<std::string, std::string>;

// ---- safetensors ---------------------------------------------------------------------------

// Writes every tensor (dtype F32 for float, F64 for double) and the metadata. Throws ValueError
// for a tensor named "__metadata__" or an I/O failure.
template <class T>
void save_safetensors(const std::filesystem::path& path, const StateDict<T>& tensors, const Metadata& metadata = {});

// What load_safetensors read: the tensors converted to T, the dtype each had in the file, and the
// metadata (empty when the header has none).
template <class T>
struct SafetensorsFile {
  StateDict<T> tensors;
  std::map<std::string, Dtype> dtypes;
  Metadata metadata;
};

// Reads and validates the whole file. Throws ValueError for: a missing file; a file shorter than
// 8 bytes or than 8 + N; a header length N larger than the file; a header that is not a JSON
// object; a key repeated in one object (a tensor named twice, a dtype given twice, ...: JSON
// parsers keep one silently); an entry without a string dtype, a shape of non-negative integers
// or two non-negative data_offsets; an unknown dtype; a shape whose non-zero sizes multiply past
// 2^63 (checked_numel, as for every shape made: even over 0 bytes); begin > end; end - begin !=
// numel * dtype size; offsets that overlap, leave a hole or leave bytes after the last tensor; a
// data buffer shorter than the largest end offset; metadata that is not an object of strings.
template <class T>
SafetensorsFile<T> load_safetensors(const std::filesystem::path& path);

// The same parse and the same checks as load_safetensors, over a whole file already in memory
// (load_safetensors reads the file and calls this). `name` stands for the file in messages:
// load_safetensors('<name>'): .... Nothing is allocated for a tensor before the header has been
// checked against the bytes actually present, so memory stays proportional to bytes.size().
template <class T>
SafetensorsFile<T> parse_safetensors(std::string_view bytes, const std::filesystem::path& name);

// ---- training checkpoints -------------------------------------------------------------------
//
// One safetensors file holding:
//   "<dotted parameter name>"            model.state_dict() (Linear weights stay [out, in], so
//                                        the same file loads into the PyTorch model of the same
//                                        structure: safetensors.torch.load_file + strict=False)
//   "optimizer.<param>.<buffer>"         Optimizer::state(), including "<param>.step" as a 0-d
//                                        tensor (e.g. "optimizer.fc.weight.exp_avg")
//   __metadata__ "step"                  the training step, decimal
//   __metadata__ "generator.<name>.seed" / "generator.<name>.offset"
//                                        each Generator's state, decimal: model.named_generators()
//                                        (the dropout streams) and the caller's extra ones (e.g.
//                                        "data", the stream that draws the batches)
//   __metadata__ any other key            the caller's own strings about the run (e.g. the copy
//                                        task's "copy_task.seq_len"); they change no tensor byte
// nn does not depend on optim, so the optimiser state travels as a map: pass optimizer.state()
// to save_checkpoint and LoadedCheckpoint::optimizer_state to optimizer.load_state().

using NamedGenerators = std::vector<std::pair<std::string, Generator*>>;

// Throws ValueError when a parameter name starts with "optimizer.", an extra generator's name is
// one of the model's or is repeated, a metadata key is "step" or starts with "generator.", or the
// write fails.
template <class T>
void save_checkpoint(const std::filesystem::path& path, Module<T>& model, const StateDict<T>& optimizer_state = {},
                     std::uint64_t step = 0, const NamedGenerators& extra_generators = {},
                     const Metadata& metadata = {});

template <class T>
struct LoadedCheckpoint {
  LoadResult parameters;                        // parameter keys a non-strict load did not match
  StateDict<T> optimizer_state;                 // "optimizer." prefix removed; empty when none saved
  std::uint64_t step = 0;                       // 0 when the file has no "step"
  std::vector<std::string> missing_generators;  // non-strict: generators with no state in the file (left as they were)
  std::vector<std::string> unexpected_generators;  // non-strict: generator states in the file that match no generator
  Metadata metadata;  // the caller's metadata: every key but "step" and "generator.*" (empty when none)
};

// Loads the parameters through model.load_state_dict(..., strict) (ShapeError for a mis-shaped
// key; strict: ValueError listing missing and unexpected keys) and restores every generator
// whose state the file holds. strict also demands that generator states match exactly: every
// generator (the model's and the extra ones) has a state in the file and every state in the file
// has a generator. A parameters-only file (e.g. written by PyTorch) loads into a model with
// dropout with strict = false, or with load_safetensors + Module::load_state_dict.
// Everything is checked before anything changes, so a failed load leaves the model and the
// generators as they were. Throws ValueError for the file problems of load_safetensors, a tensor
// stored with another dtype than T, a step or generator state that is not a decimal integer, or
// an extra generator named like one of the model's.
template <class T>
LoadedCheckpoint<T> load_checkpoint(const std::filesystem::path& path, Module<T>& model, bool strict = true,
                                    const NamedGenerators& extra_generators = {});

// ---- NumPy .npy ----------------------------------------------------------------------------

// Writes one tensor as a version 1.0 .npy file ('<f4' or '<f8', C order), atomically.
template <class T>
void save_npy(const std::filesystem::path& path, const xt::xarray<T>& tensor);

// Reads a little-endian float32 or float64 .npy file (C or Fortran order), converted to T.
// Throws ValueError naming the file for a missing file, a bad header, another dtype or a file
// shorter than its header says.
template <class T>
xt::xarray<T> load_npy(const std::filesystem::path& path);

}  // namespace tapegrad::nn
