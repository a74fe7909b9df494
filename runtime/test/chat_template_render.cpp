//===- chat_template_render.cpp - Render a chat template (test helper) ----===//
//
//   etllm-chat-template-render TEMPLATE CONTEXT.json
//
// Prints the rendering of TEMPLATE with the top-level variables of the JSON
// object in CONTEXT.json, byte for byte, on stdout. On failure prints
// "raised: MESSAGE" (the template called raise_exception; exit 2) or
// "error: MESSAGE" (anything else; exit 1) on stderr. The conformance test
// (test/ChatTemplate) compares it with jinja2.
//
//===----------------------------------------------------------------------===//
#include "etllm/runtime/llm/chat_template.h"

#include <cstdio>
#include <fstream>
#include <sstream>

using namespace etllm::rt::llm;

static bool readFile(const char *path, std::string &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr,
                 "usage: etllm-chat-template-render TEMPLATE CONTEXT.json\n");
    return 1;
  }
  std::string source, context;
  if (!readFile(argv[1], source) || !readFile(argv[2], context)) {
    std::fprintf(stderr, "error: cannot read the inputs\n");
    return 1;
  }
  auto tmpl = ChatTemplate::parse(source, argv[1]);
  if (!tmpl.ok()) {
    std::fprintf(stderr, "error: %s\n", tmpl.message().c_str());
    return 1;
  }
  RenderFailure failure;
  auto out = tmpl->renderJson(context, &failure);
  if (!out.ok()) {
    // The message after the template's name prefix.
    std::string msg = out.message();
    const std::string marker = "rejects the conversation: ";
    if (failure == RenderFailure::Raised) {
      size_t at = msg.find(marker);
      std::fprintf(stderr, "raised: %s\n",
                   at == std::string::npos ? msg.c_str()
                                           : msg.c_str() + at + marker.size());
      return 2;
    }
    std::fprintf(stderr, "error: %s\n", msg.c_str());
    return 1;
  }
  std::fwrite(out->data(), 1, out->size(), stdout);
  return 0;
}
