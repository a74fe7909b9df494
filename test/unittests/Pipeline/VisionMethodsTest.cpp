//===- VisionMethodsTest.cpp - A composite program's methods, checked -----===//
//
// llm::VisionMethods on a tiny LLaVA program (etllm-gen-checkpoint's) and on
// copies whose metadata says something the methods do not (each edit keeps
// the JSON's length, so the file stays a valid flatbuffer): every mismatch is
// one error at load, naming what differs; the good program feeds an image
// and gives logits.
//
//===----------------------------------------------------------------------===//
#include "PipelineTestUtil.h"

#include "etllm/runtime/llm/method_names.h"
#include "etllm/runtime/llm/vision_methods.h"
#include "etllm/runtime/program.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>

namespace {

using etllm::rt::Module;
using etllm::rt::Program;
namespace llm = etllm::rt::llm;

struct Opened {
  std::shared_ptr<Program> program;
  std::unique_ptr<Module> module;
};

/// The program in `bytes` with `from` replaced by `to` (same length) once.
std::string edited(std::string bytes, const std::string &from,
                   const std::string &to) {
  EXPECT_EQ(from.size(), to.size());
  size_t at = bytes.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos)
    bytes.replace(at, from.size(), to);
  return bytes;
}

/// VisionMethods::open's result on `bytes` ("" when it opens a vision
/// program).
std::string openError(const std::string &bytes, Opened *keep = nullptr) {
  auto program = Program::loadFromBuffer(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), "t.pte");
  if (!program.ok())
    return "load: " + program.message();
  auto module = Module::create(*program, {});
  if (!module.ok())
    return "module: " + module.message();
  auto vision = llm::VisionMethods::open(**module, "t.pte", 512);
  if (!vision.ok())
    return vision.message();
  if (!*vision)
    return "no vision methods";
  if (keep)
    *keep = {*program, std::move(*module)};
  return "";
}

class VisionMethodsTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir = std::filesystem::temp_directory_path() /
          ("etllm_vision_methods_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    etllm::formats::GeneratorOptions g;
    g.arch = "llava";
    g.vocab = 512;
    g.output = (dir / "hf").string();
    ASSERT_TRUE(etllm::test::generate(g));
    etllm::test::ExportForTest o;
    o.lastLogitsOnly = true;
    bytes = etllm::test::exportBytes(g.output, o);
    ASSERT_FALSE(bytes.empty());
  }
  static void TearDownTestSuite() { std::filesystem::remove_all(dir); }
  static std::filesystem::path dir;
  static std::string bytes;
};
std::filesystem::path VisionMethodsTest::dir;
std::string VisionMethodsTest::bytes;

TEST_F(VisionMethodsTest, TheProgramFeedsAnImage) {
  Opened o;
  ASSERT_EQ(openError(bytes, &o), "");
  auto vision = llm::VisionMethods::open(*o.module, "t.pte", 512);
  ASSERT_TRUE(vision.ok() && *vision);
  EXPECT_EQ((*vision)->imageSeqLen(), 16);
  EXPECT_EQ((*vision)->imageSize(), 32);
  EXPECT_EQ((*vision)->imageTokenId(), 511);
  llm::ImagePixels px{32, 32, std::vector<float>(3 * 32 * 32, 0.25f)};
  auto logits = (*vision)->prefill(px, 3, nullptr);
  ASSERT_TRUE(logits.ok()) << logits.message();
  for (int i = 0; i < 512; ++i)
    ASSERT_TRUE(std::isfinite((*logits)[i]));
  // Pixels of another size: one error, no call.
  llm::ImagePixels small{16, 16, std::vector<float>(3 * 16 * 16, 0.0f)};
  auto wrong = (*vision)->prefill(small, 3, nullptr);
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.message().find("the vision encoder takes 32 x 32"),
            std::string::npos)
      << wrong.message();
}

TEST_F(VisionMethodsTest, MetadataThatDisagreesWithTheMethodsIsRefused) {
  struct Case {
    const char *from, *to, *error;
  };
  const Case cases[] = {
      {"\"image_seq_len\":16", "\"image_seq_len\":17",
       "features [1, 17, hidden]"},
      {"\"vision_image_size\":32", "\"vision_image_size\":31",
       "vision_encoder(pixels: f32 [1, 3, 31, 31])"},
      {"\"image_token_id\":511", "\"image_token_id\":911",
       "image_token_id 911 is outside the vocabulary"},
      {"\"image_token_id\":511", "\"image_token_xx\":511",
       "'image_token_id' is missing or out of range"},
      {"\"image_seq_len\":16", "\"image_seq_len\":-6",
       "'image_seq_len' is missing or out of range"},
      {"\"image_preprocessor\":", "\"image_preprocessxx\":",
       "has no image_preprocessor"},
  };
  for (const Case &c : cases) {
    std::string error = openError(edited(bytes, c.from, c.to));
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.from << " -> " << c.to << ": " << error;
  }
}

TEST_F(VisionMethodsTest, OneMethodWithoutTheOtherIsRefused) {
  // Renaming a method (same length) leaves the program without it.
  std::string error = openError(edited(bytes, "text_decoder", "text_decodex"));
  EXPECT_NE(error.find("needs both `vision_encoder` and `text_decoder`"),
            std::string::npos)
      << error;
  error = openError(edited(bytes, "vision_encoder", "vision_encodex"));
  EXPECT_NE(error.find("needs both"), std::string::npos) << error;
}

} // namespace

// Gemma 3's image wrapping, read from the metadata: the boi/eoi tokens and
// the newlines around them; a token outside the vocabulary or a text that
// is not a string is one error at load.
TEST(VisionMethodsGemma3Test, TheWrappingIsReadAndChecked) {
  auto dir = std::filesystem::temp_directory_path() /
             ("etllm_vision_methods_g3_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  etllm::formats::GeneratorOptions g;
  g.arch = "gemma3-vision";
  g.visionPreset = "gemma3-tiny";
  g.vocab = 512;
  g.output = (dir / "hf").string();
  ASSERT_TRUE(etllm::test::generate(g));
  etllm::test::ExportForTest o;
  o.lastLogitsOnly = true;
  std::string bytes = etllm::test::exportBytes(g.output, o);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(bytes.empty());
  Opened opened;
  ASSERT_EQ(openError(bytes, &opened), "");
  auto vision = llm::VisionMethods::open(*opened.module, "t.pte", 512);
  ASSERT_TRUE(vision.ok() && *vision);
  EXPECT_EQ((*vision)->imageBeginTokenId(), 509);
  EXPECT_EQ((*vision)->imageEndTokenId(), 510);
  EXPECT_EQ((*vision)->textBefore(), "\n\n");
  EXPECT_EQ((*vision)->textAfter(), "\n\n");
  struct Case {
    const char *from, *to, *error;
  };
  const Case cases[] = {
      {"\"image_begin_token_id\":509", "\"image_begin_token_id\":909",
       "'image_begin_token_id' is not a token of the vocabulary"},
      {"\"image_end_token_id\":510", "\"image_end_token_id\":-51",
       "'image_end_token_id' is not a token of the vocabulary"},
      {"\"image_text_before\":\"\\n\\n\"", "\"image_text_before\":123456",
       "'image_text_before' is not a string of at most 256 bytes"},
  };
  for (const Case &c : cases) {
    std::string error = openError(edited(bytes, c.from, c.to));
    EXPECT_NE(error.find(c.error), std::string::npos)
        << c.from << " -> " << c.to << ": " << error;
  }
}
