//===- bpe_merge.h - The pair-merging loop shared by every BPE --*- C++ -*-===//
//
// All BPE variants here (llama2.c, SentencePiece-style score BPE, tiktoken,
// Hugging Face merges, GGUF vocabularies) repeat one step: among all adjacent
// symbol pairs that may merge, merge the best one (lowest rank; on ties the
// leftmost), until no pair may merge. They differ only in what a symbol is
// and how a pair is ranked, which `mergeBestPairs` takes as parameters.
//
// The loop is a priority queue over a linked list: O(n log n) for n initial
// symbols, instead of rescanning all pairs after every merge. Queue entries
// go stale when a neighbour merges; they are recognised by a per-symbol
// version stamp and skipped.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_TOKENIZERS_BPE_MERGE_H
#define ETLLM_RUNTIME_TOKENIZERS_BPE_MERGE_H

#include <cstdint>
#include <optional>
#include <queue>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace etllm::rt::tok {

/// Merges `syms` in place. `pairFn(const Sym &left, const Sym &right)`
/// returns std::optional<std::pair<Rank, Sym>>: nullopt when the pair may not
/// merge, otherwise its rank (lower merges first; Rank must be totally
/// ordered, so callers reject NaN scores at load) and the merged symbol.
/// Ties go to the leftmost pair, as in llama2.c run.c, llama.cpp, tiktoken
/// and Hugging Face tokenizers.
template <typename Sym, typename PairFn>
void mergeBestPairs(std::vector<Sym> &syms, PairFn &&pairFn) {
  using Opt = std::invoke_result_t<PairFn &, const Sym &, const Sym &>;
  using Rank = typename Opt::value_type::first_type;
  const int32_t n = static_cast<int32_t>(syms.size());
  if (n < 2)
    return;

  struct Candidate {
    Rank rank;
    int32_t left, right;
    uint32_t leftVersion, rightVersion;
    Sym merged;
  };
  // std::priority_queue pops the greatest: "greater" = lower rank, then
  // further left.
  struct Worse {
    bool operator()(const Candidate &a, const Candidate &b) const {
      if (a.rank != b.rank)
        return b.rank < a.rank;
      return a.left > b.left;
    }
  };

  std::vector<int32_t> prev(n), next(n);
  std::vector<uint32_t> version(n, 0);
  std::vector<char> alive(n, 1);
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }

  std::priority_queue<Candidate, std::vector<Candidate>, Worse> queue;
  auto consider = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0)
      return;
    Opt m = pairFn(syms[l], syms[r]);
    if (m)
      queue.push(Candidate{std::move(m->first), l, r, version[l], version[r],
                           std::move(m->second)});
  };
  for (int32_t i = 0; i + 1 < n; ++i)
    consider(i, i + 1);

  while (!queue.empty()) {
    Candidate c = queue.top();
    queue.pop();
    if (!alive[c.left] || !alive[c.right] || next[c.left] != c.right ||
        version[c.left] != c.leftVersion || version[c.right] != c.rightVersion)
      continue; // stale: a neighbour merged since this pair was ranked
    syms[c.left] = std::move(c.merged);
    ++version[c.left];
    alive[c.right] = 0;
    next[c.left] = next[c.right];
    if (next[c.left] >= 0)
      prev[next[c.left]] = c.left;
    consider(prev[c.left], c.left);
    consider(c.left, next[c.left]);
  }

  size_t out = 0;
  for (int32_t i = 0; i >= 0; i = next[i])
    syms[out++] = std::move(syms[i]);
  syms.resize(out);
}

/// A symbol of SentencePiece-style BPE: a byte range of the working text and
/// its token id (-1 while the range is no token, e.g. an unknown character).
struct SpmSymbol {
  uint32_t begin, len;
  int32_t id;
};

/// The SentencePiece-BPE core shared by llama2.c and GGUF "llama"
/// vocabularies: adjacent symbols merge when the text they span together is
/// a token that `lookup(std::string_view)` accepts, returning
/// std::optional<std::pair<float score, int32_t id>>; the highest score
/// merges first, the leftmost on ties. The callers differ in how they build
/// the working text and initial symbols and in which tokens they accept
/// (see llama2c.cpp and gguf_vocab.cpp).
template <typename LookupFn>
void spmMerge(std::string_view text, std::vector<SpmSymbol> &syms,
              LookupFn &&lookup) {
  mergeBestPairs(syms,
                 [&](const SpmSymbol &l, const SpmSymbol &r)
                     -> std::optional<std::pair<float, SpmSymbol>> {
                   uint32_t len = l.len + r.len;
                   auto hit = lookup(text.substr(l.begin, len));
                   if (!hit)
                     return std::nullopt;
                   // Negated: mergeBestPairs merges the lowest rank first.
                   return std::make_pair(-hit->first,
                                         SpmSymbol{l.begin, len, hit->second});
                 });
}

} // namespace etllm::rt::tok

#endif // ETLLM_RUNTIME_TOKENIZERS_BPE_MERGE_H
