//===- HubCache.cpp - Models in the local Hugging Face hub cache ----------===//
//
// Follows huggingface_hub's cache layout (file_download.py,
// constants.py): the cache directory from the environment, the repository
// folder "models--" + id with "/" replaced by "--", refs/<revision> holding
// a commit hash, snapshots/<commit>/ holding links into blobs/.
//
//===----------------------------------------------------------------------===//
#include "etllm/Formats/HubCache.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

namespace etllm::formats {

namespace fs = std::filesystem;
using rt::Error;
using rt::Result;

namespace {

std::string env(const char *name) {
  const char *v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string expandUser(const std::string &path) {
  if (path.empty() || path[0] != '~')
    return path;
  if (path.size() > 1 && path[1] != '/')
    return path; // ~user: not expanded (huggingface_hub would; rare)
  return env("HOME") + path.substr(1);
}

bool isIdChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
}

/// huggingface_hub's validate_repo_id, restricted to ASCII: one optional
/// "org/", word characters, '-', '.', no "--" or "..", at most 96 characters,
/// not starting or ending with '-' or '.'.
std::string checkRepoId(const std::string &id) {
  if (id.empty())
    return "is empty";
  if (id.size() > 96)
    return "is longer than 96 characters";
  size_t slash = id.find('/');
  if (slash != std::string::npos &&
      id.find('/', slash + 1) != std::string::npos)
    return "has more than one '/' (expected org/name)";
  if (id.find("--") != std::string::npos || id.find("..") != std::string::npos)
    return "contains '--' or '..'";
  auto part = [](const std::string &p) {
    if (p.empty())
      return false;
    for (char c : p)
      if (!isIdChar(c))
        return false;
    return p.front() != '-' && p.front() != '.' && p.back() != '-' &&
           p.back() != '.';
  };
  if (slash == std::string::npos
          ? !part(id)
          : !part(id.substr(0, slash)) || !part(id.substr(slash + 1)))
    return "must be 'org/name' or 'name' made of letters, digits, '_', '-' "
           "and '.'";
  return "";
}

/// A revision names a file under refs/ (branches, tags, "pr/1") or a
/// snapshot directory: no "..", no leading '/', safe characters only.
std::string checkRevision(const std::string &rev) {
  if (rev.empty())
    return "is empty";
  if (rev.size() > 255)
    return "is longer than 255 characters";
  if (rev.front() == '/' || rev.back() == '/' ||
      rev.find("..") != std::string::npos ||
      rev.find("//") != std::string::npos)
    return "is not a branch, tag or commit name";
  for (char c : rev)
    if (!isIdChar(c) && c != '/')
      return "has a character other than letters, digits, '_', '-', '.' and "
             "'/'";
  return "";
}

bool isCommitHash(const std::string &s) {
  if (s.size() != 40)
    return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
      return false;
  return true;
}

std::string downloadHint(const std::string &repo, const std::string &rev) {
  std::string revFlag = rev == "main" ? "" : " --revision " + rev;
  return "etllm never downloads: fetch it on a machine with network access "
         "with `huggingface-cli download " +
         repo + revFlag +
         "` (it fills the same cache), or point HF_HUB_CACHE (or HF_HOME) at "
         "a cache that has it";
}

std::vector<std::string> listSnapshots(const fs::path &dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir / "snapshots", ec), end; !ec && it != end;
       it.increment(ec))
    out.push_back(it->path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

std::string hfHubCacheDir() {
  if (std::string v = env("HF_HUB_CACHE"); !v.empty())
    return expandUser(v);
  if (std::string v = env("HUGGINGFACE_HUB_CACHE"); !v.empty())
    return expandUser(v);
  if (std::string v = env("HF_HOME"); !v.empty())
    return (fs::path(expandUser(v)) / "hub").string();
  if (std::string v = env("XDG_CACHE_HOME"); !v.empty())
    return (fs::path(expandUser(v)) / "huggingface" / "hub").string();
  return (fs::path(expandUser("~/.cache")) / "huggingface" / "hub").string();
}

Result<std::string> resolveHfHubId(const std::string &idAndRevision,
                                   const std::string &cacheDirArg) {
  std::string id = idAndRevision, rev = "main";
  if (size_t at = idAndRevision.find('@'); at != std::string::npos) {
    id = idAndRevision.substr(0, at);
    rev = idAndRevision.substr(at + 1);
  }
  if (std::string why = checkRepoId(id); !why.empty())
    return Error("hub id '" + idAndRevision + "': the repository id " + why);
  if (std::string why = checkRevision(rev); !why.empty())
    return Error("hub id '" + idAndRevision + "': the revision " + why);

  std::string cacheDir = cacheDirArg.empty() ? hfHubCacheDir() : cacheDirArg;
  std::string folder = "models--" + id;
  for (size_t p; (p = folder.find('/')) != std::string::npos;)
    folder.replace(p, 1, "--");
  fs::path repoDir = fs::path(cacheDir) / folder;
  std::string where = "hub id '" + id + "'";
  std::error_code ec;
  if (!fs::is_directory(repoDir, ec))
    return Error(where + " is not in the local Hugging Face cache (no " +
                 repoDir.string() + "; the cache is " + cacheDir + ", from " +
                 (!env("HF_HUB_CACHE").empty() ? "HF_HUB_CACHE"
                  : !env("HUGGINGFACE_HUB_CACHE").empty()
                      ? "HUGGINGFACE_HUB_CACHE"
                  : !env("HF_HOME").empty()        ? "HF_HOME"
                  : !env("XDG_CACHE_HOME").empty() ? "XDG_CACHE_HOME"
                                                   : "the default location") +
                 "). " + downloadHint(id, rev));

  // The commit: refs/<rev> (a branch or tag), else <rev> itself when it is a
  // snapshot directory (a commit hash given directly).
  std::string commit;
  fs::path ref = repoDir / "refs" / rev;
  if (fs::is_regular_file(ref, ec)) {
    std::ifstream in(ref, std::ios::binary);
    std::string text;
    std::getline(in, text, '\0');
    while (!text.empty() &&
           (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
      text.pop_back();
    if (!isCommitHash(text))
      return Error(where + ": " + ref.string() +
                   " does not hold a commit hash (40 lowercase hex digits)");
    commit = text;
  } else if (rev.find('/') == std::string::npos &&
             fs::is_directory(repoDir / "snapshots" / rev, ec)) {
    commit = rev;
  } else {
    std::string have;
    for (const std::string &s : listSnapshots(repoDir))
      have += (have.empty() ? "" : ", ") + s;
    return Error(where + ": the cache has no revision '" + rev + "' (no " +
                 ref.string() +
                 (have.empty() ? "; no snapshots" : "; snapshots: " + have) +
                 "). " + downloadHint(id, rev));
  }
  fs::path snapshot = repoDir / "snapshots" / commit;
  if (!fs::is_directory(snapshot, ec))
    return Error(where + ": revision '" + rev + "' is commit " + commit +
                 ", but " + snapshot.string() +
                 " is missing (an incomplete download). " +
                 downloadHint(id, rev));
  fs::path config = snapshot / "config.json";
  if (!fs::exists(fs::symlink_status(config, ec)))
    return Error(where + ": " + snapshot.string() +
                 " has no config.json (not a transformers model, or an "
                 "incomplete download). " +
                 downloadHint(id, rev));
  if (!fs::exists(config, ec))
    return Error(where + ": " + config.string() +
                 " is a dangling link into blobs/ (an incomplete download). " +
                 downloadHint(id, rev));
  return snapshot.string();
}

} // namespace etllm::formats
