// The scratch field of model-config-field.td, used as the code that reads
// and writes the model config uses a field: compiled against the header
// generated from the copy of ModelConfig.td that declares it (and nothing
// else edited), then run.
#include "Internal.h"
#include "etllm/Formats/ModelConfig.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <type_traits>

namespace etllm::formats {
namespace {
#define GET_CONFIG_JSON
#include "etllm/Models/ModelConfig.h.inc"
} // namespace
} // namespace etllm::formats

using namespace etllm;
using namespace etllm::formats;

static_assert(std::is_same_v<decltype(ModelConfig::scratchWindow), int64_t>);

int main() {
  int failures = 0;
  auto check = [&](bool ok, const char *what) {
    std::printf("%s: %s\n", ok ? "ok" : "FAIL", what);
    failures += ok ? 0 : 1;
  };
  ModelConfig c;
  check(c.scratchWindow == 7, "the member has its declared default");
  detail::setField(c, models::ConfigField::ScratchWindow, 9);
  check(c.scratchWindow == 9 &&
            detail::getField(c, models::ConfigField::ScratchWindow) == 9.0,
        "a family key reads and writes it");
  nlohmann::json j = writeFields(c);
  check(j.value("scratch_window", 0) == 9, "the struct's JSON writes it");
  ModelConfig back;
  check(readFields(back, j, "fields").ok() && back.scratchWindow == 9,
        "the struct's JSON reads it");
  j["scratch_window"] = "wide";
  Status bad = readFields(back, j, "fields");
  check(!bad.ok() && bad.message() ==
                         "fields: 'scratch_window' must be an integer",
        "a wrong type is refused by name");
  return failures;
}
