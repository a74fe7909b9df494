//===- Image.cpp - Image preprocessing for vision encoders ----------------===//
//
// etllm.preprocess_image: the runtime's decoding and image processor steps
// (runtime/image), as a program's vision input would get them.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "etllm/runtime/image/preprocess.h"

#include <pybind11/numpy.h>

#include <cstring>

namespace py = pybind11;

namespace etllm::python {

void bindImage(py::module_ &m) {
  m.def(
      "preprocess_image",
      [](const std::string &path, const std::string &preprocessorConfig) {
        namespace img = etllm::rt::image;
        img::PreprocessConfig config;
        rt::Status st = img::parsePreprocessorConfig(
            preprocessorConfig, "preprocessor config", config);
        if (!st.ok())
          throw Error(st.message());
        img::Image image;
        st = img::load(path, image);
        if (!st.ok())
          throw Error(st.message());
        img::Pixels px;
        st = img::preprocess(image, config, px);
        if (!st.ok())
          throw Error(path + ": " + st.message());
        py::array_t<float> out({int64_t(3), px.height, px.width});
        std::memcpy(out.mutable_data(), px.chw.data(),
                    px.chw.size() * sizeof(float));
        return out;
      },
      py::arg("path"), py::arg("preprocessor_config"),
      "Decodes the PNG or JPEG at `path` and applies the steps of the image "
      "processor whose preprocessor_config.json text is given: float32 "
      "pixels [3, H, W], equal to its PIL backend's pixel_values.");
  m.def(
      "preprocess_image_tiles",
      [](const std::string &path, const std::string &preprocessorConfig) {
        namespace img = etllm::rt::image;
        img::Pixels px;
        rt::Status st = img::loadForModel(path, preprocessorConfig,
                                          "preprocessor config", px);
        if (!st.ok())
          throw Error(st.message());
        py::array_t<float> tiles(
            {int64_t(px.tiles.size()), int64_t(3), px.height, px.width});
        for (size_t k = 0; k < px.tiles.size(); ++k)
          std::memcpy(tiles.mutable_data() + k * px.chw.size(),
                      px.tiles[k].data(), px.chw.size() * sizeof(float));
        py::array_t<float> global({int64_t(3), px.height, px.width});
        std::memcpy(global.mutable_data(), px.chw.data(),
                    px.chw.size() * sizeof(float));
        return py::make_tuple(px.rows, px.cols, tiles, global);
      },
      py::arg("path"), py::arg("preprocessor_config"),
      "An image file as the processor makes it, tiles included: (rows, "
      "cols, tiles float32 [rows * cols, 3, H, W] row by row, the global "
      "image [3, H, W]); rows = cols = 0 and no tiles when the processor "
      "does not split images.");
}

} // namespace etllm::python
