// model/zoo_builders: builders of the zoo models that are not plain decoder-only transformers (T5, ViT, Swin,
// ResNet-50, VGG-16, AMP's TransGAN generator). Internal to src/model.
#pragma once
#include <cstdint>
#include <string>

#include "strata/model/model.hpp"

namespace strata::model::detail {

// T5 (v1.0): shared embedding → `layers_each` encoder blocks → `layers_each` decoder blocks → tied head.
Model build_t5(const std::string& name, std::int64_t layers_each);
// BERT: a bidirectional transformer with learned positions and a tied MLM head with an output bias.
Model build_bert(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads);
// ViT-Huge/14 on 224×224 images: 256 patches + [CLS] = 257 tokens, classifier over 1000 classes.
Model build_vit(const std::string& name, std::int64_t layers);
// Swin with four stages (depths, widths 320·2^i) and patch merging between stages, window 7×7.
Model build_swin(const std::string& name, std::int64_t stage3_depth);
Model build_resnet50();
Model build_vgg16();
// AMP §6.5.3: TransGAN generator, 12 blocks at h = 1024 (9×9 tokens) then 12 blocks at h = 16 (72×72 tokens).
Model build_transgan();

}  // namespace strata::model::detail
