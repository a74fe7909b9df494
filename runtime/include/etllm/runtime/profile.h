//===- profile.h - Time per operator of a module's executions ---*- C++ -*-===//
//
// An OpProfile attached to an ExecContext (ExecContext::setProfile) records
// where Method::execute spends its time: every portable instruction by its
// operator, every delegate call, and, inside a delegate that records its
// own nodes (the cpu backend), each node (or group of nodes run as one
// kernel call) by its operator. `etllm-bench --profile` prints it. Without
// a profile nothing is recorded and execute pays one branch per
// instruction. One profile belongs to one thread's executions (not
// synchronized).
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_RUNTIME_PROFILE_H
#define ETLLM_RUNTIME_PROFILE_H

#include "etllm/runtime/kernel.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace etllm::rt {

/// Nanoseconds of the steady clock (what profiles are recorded with).
int64_t profileNowNs();

class OpProfile {
public:
  /// Where an operator ran.
  enum class Where : uint8_t { Portable, Delegate };

  /// One kernel call of `op` that took `ns` and ran `nodes` graph nodes
  /// (several for a fused group, e.g. the q, k and v projections).
  void add(Where where, OpId op, int64_t ns, uint32_t nodes = 1);
  /// One delegate call (all of it, the nodes it recorded included).
  void addDelegateCall(int64_t ns);
  /// One Method::execute.
  void addExecute(int64_t ns);
  void reset();

  struct Row {
    Where where;
    OpId op;
    uint64_t calls = 0, nodes = 0;
    int64_t ns = 0;
  };
  /// The operators that ran, most time first (ties: by where, then op).
  std::vector<Row> rows() const;
  uint64_t executions() const { return executions_; }
  int64_t executeNs() const { return executeNs_; }
  uint64_t delegateCalls() const { return delegateCalls_; }
  int64_t delegateNs() const { return delegateNs_; }

  /// A markdown table of the rows per execution (calls, nodes,
  /// microseconds, share of execute's time), then what no operator was
  /// charged with: delegate calls outside their recorded nodes (binding
  /// checks, delegates that record nothing; when there were delegate calls)
  /// and execute outside its instructions.
  std::string table() const;

private:
  struct Cell {
    uint64_t calls = 0, nodes = 0;
    int64_t ns = 0;
  };
  std::array<Cell, size_t(OpId::NumOps)> cells_[2];
  uint64_t executions_ = 0, delegateCalls_ = 0;
  int64_t executeNs_ = 0, delegateNs_ = 0;
};

/// Name of `w` ("portable", "delegate").
const char *whereName(OpProfile::Where w);

} // namespace etllm::rt

#endif // ETLLM_RUNTIME_PROFILE_H
