//===- Calibrate.h - Activation ranges for static quantization --*- C++ -*-===//
//
// etllm-calibrate: runs the float program on a text and records, on each
// etllm.linear of `forward`, the largest |x| its input took
// (etllm.act_absmax), which etllm-quantize's static activations
// (activations=int8-static) take their scale from.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_PIPELINE_CALIBRATE_H
#define ETLLM_PIPELINE_CALIBRATE_H

#include "mlir/Pass/Pass.h"

#include <cstdint>
#include <memory>
#include <string>

namespace etllm {

struct CalibrateOptions {
  /// The calibration text (UTF-8).
  std::string file;
  /// Windows of the text run, each from position 0.
  int64_t samples = 8;
  /// Tokens per window (at most the model's max_seq_len).
  int64_t window = 128;
  /// A tokenizer file (empty: the checkpoint's, a GGUF's vocabulary).
  std::string tokenizer;
};

/// The largest text etllm-calibrate reads.
inline constexpr uint64_t kMaxCalibrationBytes = uint64_t(64) << 20;

std::unique_ptr<mlir::Pass> createCalibratePass(const CalibrateOptions &o);

/// Registers etllm-calibrate with etllm-opt's passes.
void registerCalibratePass();

} // namespace etllm

#endif // ETLLM_PIPELINE_CALIBRATE_H
