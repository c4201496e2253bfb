#include "examples/attention_study/study_tokens.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "examples/cli/flags.h"
#include "examples/cli/model_flags.h"
#include "examples/cli/program.h"
#include "nn/copy_task/copy_task.h"

namespace tapegrad::attention_study {

namespace {

namespace fs = std::filesystem;
using examples::UsageError;

// A file longer than this cannot be a study batch (16 lines of 64 short tokens): refused before
// it is read.
constexpr std::uintmax_t kMaxFileBytes = 1 << 20;
constexpr std::string_view kBlanks = " \t\r\n\v\f";

// Where the text came from: the flag as messages name it ("--tokens", "--tokens-file 'a.txt'"),
// and whether its sequences are lines (numbered in messages) or ';'-separated groups.
struct Source {
  std::string flag;
  bool lines = false;
};

std::vector<std::string_view> words_of(std::string_view group) {
  std::vector<std::string_view> words;
  for (std::size_t begin = group.find_first_not_of(kBlanks); begin != std::string_view::npos;) {
    const std::size_t end = std::min(group.find_first_of(kBlanks, begin), group.size());
    words.push_back(group.substr(begin, end - begin));
    begin = group.find_first_not_of(kBlanks, end);
  }
  return words;
}

// The token `word` at `position` of a sequence, checked; `at` names the sequence in messages.
Index token_of(const std::string& at, std::size_t position, std::string_view word, std::size_t vocab) {
  const std::string prefix = at + ", position " + std::to_string(position) + ": " + examples::quoted_value(word);
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(word.data(), word.data() + word.size(), value);
  if (end != word.data() + word.size() || (error != std::errc() && error != std::errc::result_out_of_range))
    throw UsageError(prefix + " is not a token id (a non-negative integer)");
  const bool in_vocab = error == std::errc() && value < vocab;
  if (position == 0) {
    if (value != static_cast<std::uint64_t>(copy_task::kStart) || !in_vocab)
      throw UsageError(prefix + " is not the start symbol " + std::to_string(copy_task::kStart) +
                       ", which begins every sequence");
    return copy_task::kStart;
  }
  if (in_vocab && value == static_cast<std::uint64_t>(copy_task::kPad))
    throw UsageError(prefix + " is the padding symbol, which a study batch cannot hold: every target position is "
                              "studied, and the copy-task model never saw padding");
  if (in_vocab && value == static_cast<std::uint64_t>(copy_task::kStart))
    throw UsageError(prefix + " is the start symbol, which only begins a sequence");
  if (!in_vocab)
    throw UsageError(prefix + " is outside the copy task's tokens, 2 to " + std::to_string(vocab - 1));
  return static_cast<Index>(value);
}

IndexArray parse(std::string_view text, const Source& source, std::size_t vocab) {
  const char separator = source.lines ? '\n' : ';';
  std::vector<std::vector<Index>> rows;
  std::size_t group = 0;
  for (std::size_t begin = 0; begin <= text.size(); ++group) {
    const std::size_t end = std::min(text.find(separator, begin), text.size());
    const std::vector<std::string_view> words = words_of(text.substr(begin, end - begin));
    begin = end + 1;
    if (words.empty()) continue;
    const std::size_t sequence = rows.size();
    const std::string at = source.flag + ": sequence " + std::to_string(sequence) +
                           (source.lines ? " (line " + std::to_string(group + 1) + ")" : "");
    if (sequence == kMaxStudySequences)
      throw UsageError(at + " is one too many: a study batch has at most " + std::to_string(kMaxStudySequences) +
                       " sequences (as --sequences)");
    if (words.size() < 2 || words.size() > copy_task::kMaxSeqLen)
      throw UsageError(at + " has " + std::to_string(words.size()) + " token" + (words.size() == 1 ? "" : "s") +
                       ": a sequence is the start symbol and 1 to " + std::to_string(copy_task::kMaxSeqLen - 1) +
                       " tokens (as --seq-len, 2 to " + std::to_string(copy_task::kMaxSeqLen) + ")");
    std::vector<Index> row;
    for (std::size_t position = 0; position < words.size(); ++position)
      row.push_back(token_of(at, position, words[position], vocab));
    if (!rows.empty() && row.size() != rows.front().size())
      throw UsageError(at + " has " + std::to_string(row.size()) + " tokens, sequence 0 has " +
                       std::to_string(rows.front().size()) + ": every sequence of a batch has the same length");
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw UsageError(source.flag + ": no sequence (give one per " +
                                     (source.lines ? std::string("line") : std::string("';'-separated group")) + ")");
  IndexArray out = IndexArray::from_shape({rows.size(), rows.front().size()});
  for (std::size_t b = 0; b < rows.size(); ++b)
    for (std::size_t s = 0; s < rows[b].size(); ++s) out(b, s) = rows[b][s];
  return out;
}

}  // namespace

IndexArray parse_study_tokens(std::string_view text, std::size_t vocab) {
  return parse(text, Source{"--tokens", false}, vocab);
}

IndexArray read_study_tokens_file(const fs::path& path, std::size_t vocab) {
  // The path whole (quoted_value would cut it): it is what the user must find.
  const Source source{"--tokens-file '" + examples::visible(path.string()) + "'", true};
  std::error_code error;
  if (fs::is_directory(path, error)) throw UsageError(source.flag + ": is a directory, not a file");
  const std::uintmax_t bytes = fs::file_size(path, error);
  if (error) throw UsageError(source.flag + ": cannot be read (" + error.message() + ")");
  if (bytes > kMaxFileBytes)
    throw UsageError(source.flag + ": " + std::to_string(bytes) + " bytes is no study batch (at most " +
                     std::to_string(kMaxStudySequences) + " lines of at most " +
                     std::to_string(copy_task::kMaxSeqLen) + " tokens)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(source.flag + ": cannot be opened (" + std::strerror(errno) + ")");
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), source, vocab);
}

}  // namespace tapegrad::attention_study
