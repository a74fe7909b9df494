//===- chat_template_test.cpp - The chat template interpreter -------------===//
//
// Rendering agreement with jinja2 is test/ChatTemplate's job; these
// check the API, the errors (one clear message with a line number, never a
// crash) and the bounds on hostile templates.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/chat_template.h"

#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

using namespace etllm::rt::llm;

namespace {

std::string render(const std::string &src, const ChatContext &ctx = {},
                   RenderFailure *failure = nullptr,
                   const TemplateLimits &limits = {}) {
  auto t = ChatTemplate::parse(src, "t.jinja", limits);
  if (!t.ok())
    return "PARSE: " + t.message();
  auto out = t->render(ctx, failure);
  return out.ok() ? *out : "RENDER: " + out.message();
}

ChatContext conversation() {
  ChatContext c;
  c.messages = {{"system", "Be brief."}, {"user", "Hi"}};
  c.bosToken = "<s>";
  c.eosToken = "</s>";
  return c;
}

TEST(ChatTemplate, RendersAConversation) {
  const char *chatml =
      "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content "
      "+ '<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ "
      "'<|im_start|>assistant\\n' }}{% endif %}";
  EXPECT_EQ(render(chatml, conversation()),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_"
            "end|>\n<|im_start|>assistant\n");
  ChatContext noGen = conversation();
  noGen.addGenerationPrompt = false;
  EXPECT_EQ(render(chatml, noGen),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_"
            "end|>\n");
}

TEST(ChatTemplate, SpecialTokensAndHfDefaults) {
  EXPECT_EQ(render("{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ "
                   "documents is none }}|{{ foo is defined }}",
                   conversation()),
            "<s>|</s>|True|True|False");
}

TEST(ChatTemplate, RaiseExceptionIsReportedAsTheTemplates) {
  RenderFailure f;
  std::string out = render(
      "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System "
      "role not supported') }}{% endif %}",
      conversation(), &f);
  EXPECT_EQ(f, RenderFailure::Raised);
  EXPECT_NE(out.find("rejects the conversation: System role not supported"),
            std::string::npos)
      << out;
}

TEST(ChatTemplate, ParseErrorsNameTheLine) {
  EXPECT_EQ(render("line1\n{% if x %}\nno end"),
            "PARSE: t.jinja: line 3: unexpected end of template, expected "
            "'elif' or 'else' or 'endif'");
  EXPECT_EQ(render("a\n\n{{ x | nosuchfilter }}"),
            "PARSE: t.jinja: line 3: unknown filter 'nosuchfilter'");
  EXPECT_EQ(render("{{ x is nosuchtest }}"),
            "PARSE: t.jinja: line 1: unknown test 'nosuchtest'");
  EXPECT_EQ(render("{% macro m() %}{% endmacro %}"),
            "PARSE: t.jinja: line 1: the 'macro' tag is not supported by "
            "etllm's chat template interpreter");
  EXPECT_EQ(render("{{ 'abc }}"), "PARSE: t.jinja: line 1: unterminated "
                                  "string literal");
  EXPECT_EQ(render("{# never closed"),
            "PARSE: t.jinja: line 1: unclosed comment (no '#}')");
  EXPECT_EQ(render("{{ x"), "PARSE: t.jinja: line 1: unclosed '{{' (no '}}')");
  EXPECT_EQ(render("{{ (1 }}"), "PARSE: t.jinja: line 1: unexpected '}'");
  EXPECT_EQ(render("{{ 1 ] }}"), "PARSE: t.jinja: line 1: unexpected ']'");
  EXPECT_EQ(render("{% endfor %}"), "PARSE: t.jinja: line 1: unexpected "
                                    "'endfor'");
  EXPECT_EQ(render("{{ 99999999999999999999 }}"),
            "PARSE: t.jinja: line 1: integer literal 99999999999999999999 is "
            "out of range");
}

TEST(ChatTemplate, RuntimeErrorsAreUnsupportedNotRaised) {
  RenderFailure f;
  std::string out = render("\n{{ 'a' + 1 }}", {}, &f);
  EXPECT_EQ(f, RenderFailure::Unsupported);
  EXPECT_EQ(out, "RENDER: t.jinja: line 2: unsupported operand type(s) for "
                 "+: 'str' and 'int'");
  EXPECT_EQ(render("{{ missing.attr }}"),
            "RENDER: t.jinja: line 1: 'missing' is undefined");
  EXPECT_EQ(render("{{ 1 // 0 }}"),
            "RENDER: t.jinja: line 1: integer division or modulo by zero");
  EXPECT_EQ(render("{{ 9223372036854775807 + 1 }}"),
            "RENDER: t.jinja: line 1: integer overflow");
  // The least int64 divided by -1 overflows (a trap in C++, not an error);
  // Python's answers.
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) // -1 }}"),
            "RENDER: t.jinja: line 1: integer overflow");
  EXPECT_EQ(render("{{ (-9223372036854775807 - 1) is divisibleby(-1) }} "
                   "{{ (-9223372036854775807 - 1) is divisibleby(-3) }}"),
            "True False");
  EXPECT_EQ(render("{{ [1][::0] }}"),
            "RENDER: t.jinja: line 1: slice step cannot be zero");
  EXPECT_EQ(render("{% set x = 1 %}{% set x.a = 2 %}"),
            "RENDER: t.jinja: line 1: cannot assign attribute 'a' of 'x': it "
            "is not a namespace");
}

TEST(ChatTemplate, HostileTemplatesAreBounded) {
  // Deep nesting: parse error, no stack overflow.
  std::string deep = std::string(100000, '(') + "1" + std::string(100000, ')');
  EXPECT_NE(render("{{ " + deep + " }}").find("nests too deeply"),
            std::string::npos);
  std::string ifs;
  for (int k = 0; k < 5000; ++k)
    ifs += "{% if true %}";
  EXPECT_NE(render(ifs).find("nests too deeply"), std::string::npos);
  // Output bombs stop at the output limit.
  TemplateLimits small;
  small.maxOutputBytes = 1 << 16;
  EXPECT_NE(render("{% for i in range(100000) %}xxxxxxxx{% endfor %}", {},
                   nullptr, small)
                .find("larger than the limit"),
            std::string::npos);
  EXPECT_NE(render("{{ 'x' * 100000000000 }}", {}, nullptr, small)
                .find("larger than the limit"),
            std::string::npos);
  EXPECT_NE(render("{% set s = namespace(v='x') %}{% for i in range(64) %}{% "
                   "set s.v = s.v ~ s.v %}{% endfor %}",
                   {}, nullptr, small)
                .find("larger than the limit"),
            std::string::npos);
  // Long loops stop at the step budget.
  TemplateLimits steps;
  steps.maxSteps = 100000;
  EXPECT_NE(render("{% for i in range(1000) %}{% for j in range(1000) %}{% "
                   "endfor %}{% endfor %}",
                   {}, nullptr, steps)
                .find("evaluation budget"),
            std::string::npos);
  // A namespace that contains itself cannot be printed forever.
  EXPECT_NE(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}")
                .find("nests too deeply"),
            std::string::npos);
  EXPECT_NE(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me | "
                   "tojson }}")
                .find("tojson"),
            std::string::npos);
  // Source size.
  TemplateLimits tiny;
  tiny.maxSourceBytes = 10;
  EXPECT_NE(render("{{ 'more than ten bytes' }}", {}, nullptr, tiny)
                .find("more than the limit 10"),
            std::string::npos);
}

// A namespace made to hold itself, directly, through a list or through
// another namespace, is a reference cycle; the render must still free it (found
// by the chat-template fuzzer's leak check: fuzz/regressions/chat-template).
// Counted with glibc's allocator statistics: 2,000 leaking renders would
// keep several hundred KiB. (Under AddressSanitizer, whose allocator glibc's
// statistics do not see, the fuzz build's leak check is the test.)
TEST(ChatTemplate, SelfReferencingNamespacesAreFreed) {
#if defined(__GLIBC__)
  const char *cycles[] = {
      "{% set ns = namespace() %}{% set ns.me = ns %}x",
      "{% set ns = namespace(n=1) %}{% set ns.l = [1, ns] %}x",
      "{% set a = namespace() %}{% set b = namespace(a=a) %}{% set a.b = b "
      "%}x",
  };
  for (const char *src : cycles) {
    auto t = ChatTemplate::parse(src, "t.jinja");
    ASSERT_TRUE(t.ok()) << t.message();
    auto first = t->render({});
    ASSERT_TRUE(first.ok()) << src << ": " << first.message();
    ASSERT_EQ(*first, "x") << src;
    const size_t before = mallinfo2().uordblks;
    for (int i = 0; i < 2000; ++i)
      ASSERT_TRUE(t->render({}).ok());
    const size_t after = mallinfo2().uordblks;
    EXPECT_LT(after, before + 64 * 1024)
        << src << ": " << after - before << " bytes kept by 2000 renders";
  }
#else
  GTEST_SKIP() << "needs glibc's mallinfo2";
#endif
}

TEST(ChatTemplate, ArbitraryBytesNeverCrash) {
  // Invalid UTF-8 in content and template text is carried through.
  ChatContext c;
  c.messages = {{"user", std::string("\xff\xfe bad \xc3")}};
  EXPECT_EQ(render("{{ messages[0].content | length }}|{{ "
                   "messages[0].content[::-1] | length }}|\xff",
                   c),
            "8|8|\xff");
  // Every prefix of a real template either parses or is a clear error.
  std::string src =
      "{%- for m in messages %}{{- '<|' ~ m['role'] ~ '|>' + m.content | trim "
      "}}{% if not loop.last %}\n{% endif %}{%- endfor %}";
  for (size_t n = 0; n <= src.size(); ++n) {
    auto t = ChatTemplate::parse(src.substr(0, n), "prefix");
    if (t.ok())
      (void)t->render(conversation());
    else
      EXPECT_EQ(t.message().rfind("prefix: line ", 0), 0u) << t.message();
  }
}

TEST(ChatTemplate, RenderJsonTakesAnyVariables) {
  auto t = ChatTemplate::parse(
      "{{ messages[0].tool_calls[0].function.name }} {{ enable_thinking }}",
      "t");
  ASSERT_TRUE(t.ok());
  auto out = t->renderJson(
      R"({"messages":[{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}],"enable_thinking":false})");
  ASSERT_TRUE(out.ok()) << out.message();
  EXPECT_EQ(*out, "f False");
  EXPECT_FALSE(t->renderJson("[1]").ok());
  EXPECT_FALSE(t->renderJson("{not json").ok());
}

TEST(ChatTemplate, EndOfTurnMarkers) {
  EXPECT_EQ(endOfTurnMarkers("{{ '<|im_start|>' }}x<|im_end|>"),
            std::vector<std::string>{"<|im_end|>"});
  EXPECT_EQ(endOfTurnMarkers("<start_of_turn>model<end_of_turn>"),
            std::vector<std::string>{"<end_of_turn>"});
  EXPECT_EQ(endOfTurnMarkers("<|eot_id|> <|eom_id|>"),
            (std::vector<std::string>{"<|eot_id|>", "<|eom_id|>"}));
  EXPECT_TRUE(endOfTurnMarkers("[INST] x [/INST]").empty());
}

} // namespace
