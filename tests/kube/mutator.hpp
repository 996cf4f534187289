// Deterministic text mutations for robustness tests (a poor man's fuzzer that runs in CI).
#pragma once

#include <cstdint>
#include <string>

namespace gpupool::test {

class Mutator {
 public:
  Mutator(std::uint64_t seed, std::string alphabet) : state_(seed), alphabet_(std::move(alphabet)) {}
  /// A number from a 64-bit LCG (Knuth's MMIX constants).
  std::size_t next() {
    state_ = state_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>(state_ >> 33);
  }
  /// `text` with 1..max_edits characters replaced, deleted or inserted.
  std::string mutate(std::string text, int max_edits) {
    for (int k = 0, n = 1 + static_cast<int>(next() % static_cast<std::size_t>(max_edits)); k < n && !text.empty();
         ++k) {
      std::size_t pos = next() % text.size();
      switch (next() % 3) {
        case 0:
          text[pos] = alphabet_[next() % alphabet_.size()];
          break;
        case 1:
          text.erase(pos, 1 + next() % 8);
          break;
        default:
          text.insert(pos, 1, alphabet_[next() % alphabet_.size()]);
      }
    }
    return text;
  }

 private:
  std::uint64_t state_;
  std::string alphabet_;
};

}  // namespace gpupool::test
