//===- TextFile.h - A whole small file, bounded before it is read -*- C++
//-*-===//
//
// The one reader of small input files (config.json, tokenizer_config.json,
// a calibration text): a regular file of at most `maxBytes`, checked before
// anything is read; every error names the path.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_TEXTFILE_H
#define ETLLM_FORMATS_TEXTFILE_H

#include "etllm/runtime/result.h"

#include <cstdint>
#include <string>

namespace etllm::formats {

rt::Result<std::string> readTextFile(const std::string &path,
                                     uint64_t maxBytes = 64u << 20);

} // namespace etllm::formats

#endif // ETLLM_FORMATS_TEXTFILE_H
