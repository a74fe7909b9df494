//===- HubCache.h - Models in the local Hugging Face hub cache --*- C++ -*-===//
//
// Resolves a hub id ("org/name") to a model directory of the local cache
// laid out the way huggingface_hub writes it:
//
//   <cache>/models--org--name/refs/main          the commit of "main"
//   <cache>/models--org--name/snapshots/<commit>/config.json -> ../../blobs/..
//   <cache>/models--org--name/blobs/<sha>        the file contents
//
// The one implementation behind `etllm-export --hf-id` and the Python
// package's `--hf_id`. It never uses the network: a model that is not in the
// cache is an error saying where it looked and how to download it.
//
// Nothing here depends on LLVM/MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ETLLM_FORMATS_HUBCACHE_H
#define ETLLM_FORMATS_HUBCACHE_H

#include "etllm/runtime/result.h"

#include <string>

namespace etllm::formats {

/// The hub cache directory, in huggingface_hub's order: $HF_HUB_CACHE, else
/// $HUGGINGFACE_HUB_CACHE (its older name), else $HF_HOME/hub, else
/// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub. A leading
/// `~` is expanded.
std::string hfHubCacheDir();

/// Resolves `id` ("org/name" or "name", optionally "@revision") to the
/// snapshot directory of the cache at `cacheDir` (empty: hfHubCacheDir()).
/// The revision (default "main") is read from refs/<revision>, or taken as a
/// commit hash when snapshots/<revision>/ exists. The snapshot must hold a
/// config.json that resolves (a dangling link into blobs/ is an incomplete
/// download). Ids and revisions are checked before any path is built.
rt::Result<std::string> resolveHfHubId(const std::string &id,
                                       const std::string &cacheDir = "");

} // namespace etllm::formats

#endif // ETLLM_FORMATS_HUBCACHE_H
