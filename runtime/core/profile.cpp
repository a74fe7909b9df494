//===- profile.cpp --------------------------------------------------------===//
#include "etllm/runtime/profile.h"

#include "etllm/runtime/parallel.h"

#include <algorithm>
#include <cstdio>

namespace etllm::rt {

// The clock the thread pool's loops time their jobs with (parallel.h).
int64_t profileNowNs() { return detail::nowNs(); }

const char *whereName(OpProfile::Where w) {
  return w == OpProfile::Where::Portable ? "portable" : "delegate";
}

void OpProfile::add(Where where, OpId op, int64_t ns, uint32_t nodes) {
  if (op >= OpId::NumOps)
    return;
  Cell &c = cells_[size_t(where)][size_t(op)];
  ++c.calls;
  c.nodes += nodes;
  c.ns += ns;
}

void OpProfile::addDelegateCall(int64_t ns) {
  ++delegateCalls_;
  delegateNs_ += ns;
}

void OpProfile::addExecute(int64_t ns) {
  ++executions_;
  executeNs_ += ns;
}

void OpProfile::reset() { *this = OpProfile(); }

std::vector<OpProfile::Row> OpProfile::rows() const {
  std::vector<Row> out;
  for (Where w : {Where::Portable, Where::Delegate})
    for (size_t i = 0; i < size_t(OpId::NumOps); ++i) {
      const Cell &c = cells_[size_t(w)][i];
      if (c.calls)
        out.push_back({w, OpId(i), c.calls, c.nodes, c.ns});
    }
  std::stable_sort(out.begin(), out.end(),
                   [](const Row &a, const Row &b) { return a.ns > b.ns; });
  return out;
}

std::string OpProfile::table() const {
  const double runs = executions_ ? double(executions_) : 1.0;
  const double total = executeNs_ > 0 ? double(executeNs_) : 1.0;
  std::string s = "| op                    | where    | calls/exec | "
                  "nodes/exec |    us/exec |  share |\n"
                  "| --------------------- | -------- | ---------: | "
                  "---------: | ---------: | -----: |\n";
  char line[192];
  auto row = [&](const char *op, const char *where, const std::string &calls,
                 const std::string &nodes, int64_t ns) {
    std::snprintf(line, sizeof line,
                  "| %-21s | %-8s | %10s | %10s | %10.1f | %5.1f%% |\n", op,
                  where, calls.c_str(), nodes.c_str(), double(ns) / runs / 1e3,
                  100.0 * double(ns) / total);
    s += line;
  };
  auto perExec = [&](uint64_t n) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", double(n) / runs);
    return std::string(b);
  };
  int64_t portable = 0, delegated = 0;
  for (const Row &r : rows()) {
    row(opInfo(r.op).name, whereName(r.where), perExec(r.calls),
        perExec(r.nodes), r.ns);
    (r.where == Where::Portable ? portable : delegated) += r.ns;
  }
  if (delegateCalls_)
    row("(in delegates, other)", "delegate", perExec(delegateCalls_), "",
        std::max<int64_t>(0, delegateNs_ - delegated));
  row("(between ops)", "", "", "",
      std::max<int64_t>(0, executeNs_ - portable - delegateNs_));
  return s;
}

} // namespace etllm::rt
