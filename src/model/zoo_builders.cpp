// model/zoo_builders: the zoo models that are not plain decoder-only transformers. Shapes and sources:
//  - BERT (Devlin et al. 2019; Galvatron Table I for BERT-Huge: h = 1280, 32/48 layers), V = 30522, s = 512.
//  - T5 v1.0 large (Raffel et al. 2020; Galvatron Table I: 16+16 / 24+24 layers, h = 1024): ffn 4096, 16 heads,
//    ReLU, RMSNorm without bias, no biases, tied embeddings, V = 32128; encoder and decoder length 512 (our
//    choice: Galvatron does not state it).
//  - ViT-Huge/14 (Dosovitskiy et al. 2021; Galvatron Table I): h = 1280, 16 heads, ffn 5120, 224×224 images,
//    257 tokens, 1000 classes.
//  - Swin (Liu et al. 2021; Galvatron Table I: depths 2/2/26/2 or 2/2/42/2, widths 320/640/1280/2560): 4×4
//    patches on 224×224 (3136 tokens), heads = width/32, 7×7 windows, patch merging 4C→2C between stages.
//  - ResNet-50 v1.5 and VGG-16 (torchvision) on 224×224 images; one "token" = one sample (seq 1).
//  - TransGAN generator as in AMP §6.5.3 (seed_000): bottom width 9 (81 tokens) at h = 1024, three pixel-shuffle
//    upsamplings (channels /4, side ×2 each) to 72×72 = 5184 tokens at h = 16; 4 heads (TransGAN's default) and
//    4h MLPs; latent dimension 256; the lambda layers between are one generic layer.
#include "zoo_builders.hpp"

#include <fmt/format.h>

#include <array>

namespace strata::model::detail {
namespace {

LayerSpec block_spec(LayerKind kind, std::int64_t hidden, std::int64_t heads, std::int64_t ffn, std::int64_t seq) {
  LayerSpec l;
  l.kind = kind;
  l.hidden = hidden;
  l.heads = heads;
  l.kv_heads = heads;
  l.ffn = ffn;
  l.seq = seq;
  return l;
}

LayerSpec classifier(std::int64_t hidden, std::int64_t classes, std::int64_t seq, Norm norm) {
  LayerSpec l;
  l.kind = LayerKind::lm_head;
  l.name = "head";
  l.hidden = hidden;
  l.vocab = classes;
  l.seq = seq;
  l.norm = norm;
  l.pooled = true;
  l.bias = true;
  return l;
}

// A generic layer from a fully-connected chain `widths[0] → widths[1] → …` (with biases), 16-bit activations.
GenericNumbers fc_chain(const std::vector<double>& widths, bool dropout) {
  GenericNumbers g;
  double stored = 0;
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    g.params += widths[i] * widths[i + 1] + widths[i + 1];
    g.fwd_flops_per_sample += 2 * widths[i] * widths[i + 1];
    stored += 2 * widths[i] + (i > 0 && dropout ? widths[i] : 0);  // each FC's input [+ dropout mask]
  }
  g.bwd_flops_per_sample = 2 * g.fwd_flops_per_sample;
  g.activation_bytes_per_sample = stored;
  g.input_bytes_per_sample = 2 * widths.front();
  g.output_bytes_per_sample = 2 * widths.back();
  return g;
}

}  // namespace

Model build_bert(const std::string& name, std::int64_t layers, std::int64_t hidden, std::int64_t heads) {
  TransformerConfig c;
  c.name = name;
  c.family = "bert";
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.vocab = 30522;
  c.seq = 512;
  c.causal = false;  // bidirectional encoder
  Model m = build_transformer(c, "zoo");
  m.layers.back().bias = true;  // the MLM decoder has an output bias (its h×h transform is not modelled)
  return m;
}

Model build_t5(const std::string& name, std::int64_t layers_each) {
  constexpr std::int64_t h = 1024, heads = 16, ffn = 4096, vocab = 32128, seq = 512;
  Model m;
  m.name = name;
  m.family = "t5";
  m.seq = seq;
  m.hidden = h;
  m.heads = heads;
  m.vocab = vocab;
  LayerSpec emb;
  emb.kind = LayerKind::embedding;
  emb.name = "embedding";
  emb.hidden = h;
  emb.vocab = vocab;
  emb.seq = seq;
  emb.learned_positions = false;  // relative position buckets
  m.layers.push_back(emb);
  for (int dec = 0; dec < 2; ++dec) {
    LayerSpec l = block_spec(dec ? LayerKind::decoder : LayerKind::encoder, h, heads, ffn, seq);
    l.activation = Activation::relu;
    l.norm = Norm::rmsnorm;
    l.bias = false;
    if (dec) l.encoder_seq = seq;
    l.causal = dec == 1;  // the decoder's self-attention is masked; the encoder attends both ways
    for (std::int64_t i = 0; i < layers_each; ++i) {
      l.name = fmt::format("{}.{}", dec ? "decoder" : "encoder", i);
      m.layers.push_back(l);
    }
  }
  LayerSpec head;
  head.kind = LayerKind::lm_head;
  head.name = "lm_head";
  head.hidden = h;
  head.vocab = vocab;
  head.seq = seq;
  head.norm = Norm::rmsnorm;
  head.tied_embeddings = true;
  head.bias = false;
  m.layers.push_back(head);
  return m;
}

Model build_vit(const std::string& name, std::int64_t layers) {
  constexpr std::int64_t h = 1280, heads = 16, ffn = 5120, patch = 14, image = 224;
  constexpr std::int64_t seq = (image / patch) * (image / patch) + 1;  // 256 patches + [CLS]
  Model m;
  m.name = name;
  m.family = "vit";
  m.seq = seq;
  m.hidden = h;
  m.heads = heads;
  LayerSpec pe;
  pe.kind = LayerKind::patch_embedding;
  pe.name = "patch_embedding";
  pe.hidden = h;
  pe.patch = patch;
  pe.channels = 3;
  pe.seq = seq;
  pe.cls_token = true;
  m.layers.push_back(pe);
  LayerSpec l = block_spec(LayerKind::transformer, h, heads, ffn, seq);
  for (std::int64_t i = 0; i < layers; ++i) {
    l.name = fmt::format("block.{}", i);
    m.layers.push_back(l);
  }
  m.layers.push_back(classifier(h, 1000, seq, Norm::layernorm));
  return m;
}

Model build_swin(const std::string& name, std::int64_t stage3_depth) {
  const std::array<std::int64_t, 4> depth{2, 2, stage3_depth, 2};
  constexpr std::int64_t base = 320, tokens0 = (224 / 4) * (224 / 4), window = 7 * 7;
  Model m;
  m.name = name;
  m.family = "swin";
  m.seq = tokens0;
  m.hidden = base * 4;  // the deep stage's width
  m.heads = base * 4 / 32;
  for (int stage = 0; stage < 4; ++stage) {
    const std::int64_t width = base << stage, tokens = tokens0 >> (2 * stage);
    LayerSpec pe;
    pe.kind = LayerKind::patch_embedding;
    pe.hidden = width;
    pe.seq = tokens;
    pe.learned_positions = false;  // relative position bias inside the windows (not counted)
    if (stage == 0) {
      pe.name = "patch_embedding";
      pe.patch = 4;
      pe.channels = 3;
    } else {  // patch merging: concatenate 2×2 neighbours (4C), LayerNorm, linear 4C → 2C without bias
      pe.name = fmt::format("patch_merging.{}", stage);
      pe.patch = 2;
      pe.channels = width / 2;
      pe.pre_norm = true;
      pe.bias = false;
      pe.dropout = false;
    }
    m.layers.push_back(pe);
    LayerSpec l = block_spec(LayerKind::transformer, width, width / 32, 4 * width, tokens);
    l.attention_window = window;
    for (std::int64_t i = 0; i < depth[stage]; ++i) {
      l.name = fmt::format("stage{}.block.{}", stage, i);
      m.layers.push_back(l);
    }
  }
  m.layers.push_back(classifier(base << 3, 1000, tokens0 >> 6, Norm::layernorm));
  return m;
}

namespace {
LayerSpec conv_spec(const std::string& name, std::int64_t cin, std::int64_t cout, std::int64_t side) {
  LayerSpec l;
  l.kind = LayerKind::conv;
  l.name = name;
  l.seq = 1;
  l.conv.in_channels = cin;
  l.conv.out_channels = cout;
  l.conv.height = side;
  l.conv.width = side;
  return l;
}
}  // namespace

Model build_resnet50() {
  Model m;
  m.name = "resnet50";
  m.family = "resnet";
  m.seq = 1;
  LayerSpec stem = conv_spec("stem", 3, 64, 224);  // 7×7/2 conv + BN + ReLU + 3×3/2 max-pool
  stem.bias = false;
  stem.conv.kernel = 7;
  stem.conv.stride = 2;
  stem.conv.batch_norm = true;
  stem.conv.out_height = stem.conv.out_width = 56;
  m.layers.push_back(stem);
  struct Stage { int blocks; std::int64_t mid, out, stride; };
  const std::array<Stage, 4> stages{{{3, 64, 256, 1}, {4, 128, 512, 2}, {6, 256, 1024, 2}, {3, 512, 2048, 2}}};
  std::int64_t cin = 64, side = 56;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    for (int i = 0; i < stages[s].blocks; ++i) {
      const std::int64_t stride = i == 0 ? stages[s].stride : 1;
      LayerSpec l = conv_spec(fmt::format("layer{}.{}", s + 1, i), cin, stages[s].out, side);
      l.bias = false;
      l.conv.bottleneck = true;
      l.conv.batch_norm = true;
      l.conv.mid_channels = stages[s].mid;
      l.conv.stride = stride;
      l.conv.out_height = l.conv.out_width = side / stride;
      m.layers.push_back(l);
      cin = stages[s].out;
      side /= stride;
    }
  }
  m.layers.push_back(classifier(2048, 1000, 1, Norm::none));  // global average pool + fc
  return m;
}

Model build_vgg16() {
  Model m;
  m.name = "vgg16";
  m.family = "vgg";
  m.seq = 1;
  struct Stack { std::int64_t cin, cout, convs; };
  const std::array<Stack, 5> stacks{{{3, 64, 2}, {64, 128, 2}, {128, 256, 3}, {256, 512, 3}, {512, 512, 3}}};
  std::int64_t side = 224;
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    LayerSpec l = conv_spec(fmt::format("conv{}", i + 1), stacks[i].cin, stacks[i].cout, side);
    l.conv.convs = stacks[i].convs;
    l.conv.out_height = l.conv.out_width = side / 2;  // 2×2 max-pool
    m.layers.push_back(l);
    side /= 2;
  }
  LayerSpec fc;
  fc.kind = LayerKind::generic;
  fc.name = "classifier";
  fc.seq = 1;
  fc.generic = fc_chain({512.0 * 7 * 7, 4096, 4096, 1000}, true);
  m.layers.push_back(fc);
  return m;
}

Model build_transgan() {
  constexpr std::int64_t h1 = 1024, side1 = 9, h2 = 16, side2 = 72, heads = 4, latent = 256;
  constexpr double B = 2;
  Model m;
  m.name = "amp-transgan";
  m.family = "transgan";
  m.seq = side1 * side1;
  m.hidden = h1;
  m.heads = heads;
  LayerSpec in;
  in.kind = LayerKind::generic;
  in.name = "latent_projection";  // linear latent → 9·9·1024, + stage-1 position table
  in.seq = side1 * side1;
  in.generic = fc_chain({static_cast<double>(latent), static_cast<double>(side1 * side1 * h1)}, false);
  in.generic.params += static_cast<double>(side1 * side1 * h1);
  m.layers.push_back(in);
  for (int stage = 0; stage < 2; ++stage) {
    const std::int64_t h = stage == 0 ? h1 : h2, side = stage == 0 ? side1 : side2;
    if (stage == 1) {
      LayerSpec up;
      up.kind = LayerKind::generic;
      up.name = "upsample";  // 3 pixel shuffles (no weights) + the h = 16 stage's position table
      up.seq = side * side;
      up.generic.params = static_cast<double>(side * side * h);
      up.generic.output_bytes_per_sample = B * static_cast<double>(side * side * h);
      m.layers.push_back(up);
    }
    LayerSpec l = block_spec(LayerKind::transformer, h, heads, 4 * h, side * side);
    for (int i = 0; i < 12; ++i) {
      l.name = fmt::format("stage{}.block.{}", stage + 1, i);
      m.layers.push_back(l);
    }
  }
  LayerSpec out;
  out.kind = LayerKind::generic;
  out.name = "to_rgb";  // linear 16 → 3 per pixel
  out.seq = side2 * side2;
  out.generic = fc_chain({static_cast<double>(side2 * side2 * h2), static_cast<double>(side2 * side2 * 3)}, false);
  out.generic.params = h2 * 3 + 3;
  out.generic.fwd_flops_per_sample = 2.0 * side2 * side2 * h2 * 3;
  out.generic.bwd_flops_per_sample = 2 * out.generic.fwd_flops_per_sample;
  m.layers.push_back(out);
  return m;
}

}  // namespace strata::model::detail
