//===- Glob.cpp - Linear-time `*` glob matching ---------------------------===//
//
// Hand-written because no library the project uses offers a `*`-only glob
// with a linear bound: fnmatch(3) and llvm::GlobPattern give `?`, `[...]`
// and `\` meanings that exclude patterns never had, and both backtrack.
//
// A `*`-only pattern is a list of literal segments separated by stars:
// S0 * S1 * ... * Sk. The text matches when S0 is a prefix, Sk a suffix (not
// overlapping S0), and S1..Sk-1 occur in order in between. Taking the
// leftmost occurrence of each middle segment is always right (it leaves the
// most room for the rest), so one left-to-right pass with a linear substring
// search per segment (Knuth-Morris-Pratt) decides the match: every text
// position is looked at a bounded number of times per segment boundary, for
// O(|pattern| + |text|) in all.
//
//===----------------------------------------------------------------------===//
#include "etllm/Support/Glob.h"

#include <vector>

namespace etllm {

namespace {

/// Leftmost occurrence of `needle` (non-empty) in `hay` at or after `from`,
/// or npos; Knuth-Morris-Pratt, O(|needle| + |hay| - from). `fail` is scratch.
size_t findKmp(std::string_view hay, size_t from, std::string_view needle,
               std::vector<size_t> &fail) {
  const size_t m = needle.size();
  fail.assign(m, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && needle[i] != needle[k])
      k = fail[k - 1];
    if (needle[i] == needle[k])
      ++k;
    fail[i] = k;
  }
  for (size_t i = from, k = 0; i < hay.size(); ++i) {
    while (k > 0 && hay[i] != needle[k])
      k = fail[k - 1];
    if (hay[i] == needle[k])
      ++k;
    if (k == m)
      return i + 1 - m;
  }
  return std::string_view::npos;
}

} // namespace

bool globMatch(std::string_view pattern, std::string_view text) {
  size_t firstStar = pattern.find('*');
  if (firstStar == std::string_view::npos)
    return pattern == text;
  // The literal before the first star is a prefix, the one after the last
  // star a suffix; they must not overlap.
  size_t lastStar = pattern.rfind('*');
  std::string_view head = pattern.substr(0, firstStar);
  std::string_view tail = pattern.substr(lastStar + 1);
  if (head.size() + tail.size() > text.size() ||
      text.substr(0, head.size()) != head ||
      text.substr(text.size() - tail.size()) != tail)
    return false;
  // The middle segments, leftmost first, inside the text between them.
  std::string_view middle =
      text.substr(head.size(), text.size() - head.size() - tail.size());
  std::vector<size_t> fail;
  size_t pos = 0;
  size_t i = firstStar + 1;
  while (i < lastStar) {
    size_t next = pattern.find('*', i);
    std::string_view segment = pattern.substr(i, next - i);
    i = next + 1;
    if (segment.empty())
      continue; // "**" is "*"
    size_t hit = findKmp(middle, pos, segment, fail);
    if (hit == std::string_view::npos)
      return false;
    pos = hit + segment.size();
  }
  return true;
}

} // namespace etllm
