"""Tiny random vision-language models of every transformers family with a ``get_rope_index``
(nothing downloaded, at most 0.25M parameters each), a prompt with one image in them, and the
model's own position ids for it: the M-RoPE inputs ``patch()`` must be exact on. Shared by the
tests against transformers (tests/test_transformers_live.py); needs torch and transformers.
"""

from __future__ import annotations

import inspect

import tiny
import torch
import transformers

# Small token ids, so that the vocabulary (and the embedding / lm_head) stays tiny.
VOCAB = 256
IMG, VID, START, END = 250, 251, 252, 253  # image pad, video pad, vision start, vision end
VSTART, VEND = 248, 249  # separate video start/end (GLM), slice start/end (MiniCPM-V)
NEWLINE = 13

QWEN_IDS = dict(
    image_token_id=IMG, video_token_id=VID, vision_start_token_id=START, vision_end_token_id=END
)
GLM_IDS = dict(image_token_id=IMG, video_token_id=VID, image_start_token_id=START)
GLM_IDS.update(image_end_token_id=END, video_start_token_id=VSTART, video_end_token_id=VEND)


def text_kwargs(
    head_dim=16, heads=4, kv_heads=2, sections=(2, 3, 3), partial_rotary_factor=None, **extra
):
    """Tiny decoder: 2 layers, hidden 64. `sections` (M-RoPE) must sum to head_dim * partial / 2."""
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": list(sections)}
    kw = dict(tiny.TEXT, vocab_size=VOCAB, num_attention_heads=heads, num_key_value_heads=kv_heads)
    kw.update(head_dim=head_dim, max_position_embeddings=512, rope_parameters=rope)
    if partial_rotary_factor is not None:
        kw["rope_parameters"]["partial_rotary_factor"] = partial_rotary_factor
    kw.update(extra)
    return kw


def blocks(**extra):
    """A tiny vision tower counted in blocks (Qwen, GLM, ERNIE): 1 block, width 32, 4x4
    patches."""
    return dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2, patch_size=4, **extra)


def vit(**extra):
    """A tiny ViT counted in layers (SigLIP, PaddleOCR, HunYuan, MiniCPM-V): 1 layer, width
    32, 4x4 patches."""
    return dict(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        patch_size=4,
        **extra,
    )


def qwen_vision(**extra):
    """A tiny Qwen2.5/Qwen3 vision tower: 2x2 merge, output 64."""
    return blocks(out_hidden_size=64, temporal_patch_size=2, spatial_merge_size=2, **extra)


MINICPM_IDS = dict(image_token_id=IMG, video_token_id=VID, image_start_id=START, image_end_id=END)
MINICPM_IDS.update(slice_start_id=VSTART, slice_end_id=VEND, newline_id=NEWLINE, insert_layer_id=0)
# Qwen2-VL's tower: embed_dim 32 in blocks, merged into the text width
QWEN2_VISION = blocks(embed_dim=32, mlp_ratio=2, spatial_merge_size=2, temporal_patch_size=2)
QWEN2_VISION.update(hidden_size=64)
QWEN3_VISION = qwen_vision(num_position_embeddings=16)  # learned 4x4 position grid, interpolated
QWEN3_MOE = dict(num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32)
QWEN3_5_TEXT = dict(
    head_dim=64,
    heads=2,
    kv_heads=1,
    sections=(3, 3, 2),
    partial_rotary_factor=0.25,  # rotary dim 16
    layer_types=["linear_attention", "full_attention"],
    linear_key_head_dim=16,
    linear_value_head_dim=16,
    linear_num_key_heads=2,
    linear_num_value_heads=4,
)
GLM_VISION = qwen_vision(image_size=16)
# rotary width 16 of head_dim 32; Qwen3-VL's interleaved sections
GLM_TEXT = dict(head_dim=32, heads=2, kv_heads=1, sections=(2, 3, 3), partial_rotary_factor=0.5)
# Qwen4's indexed attention and hyper-connections
INDEXER = dict(shared_expert_intermediate_size=32, hc_count=2, hc_lowrank=8, indexer_n_heads=2)
INDEXER.update(indexer_kv_heads=1, indexer_head_dim=16, indexer_budget=8, indexer_compress_ratio=4)
QWEN3_TEXT = dict(head_dim=32, heads=2, kv_heads=1, sections=(6, 5, 5))
HUNYUAN_VISION = dict(out_hidden_size=64, spatial_merge_size=2, max_image_size=32)
OMNI_AUDIO = dict(num_mel_bins=16, encoder_layers=1, encoder_attention_heads=2)
OMNI_AUDIO.update(encoder_ffn_dim=64, d_model=32, output_dim=64)
OMNI_IDS = dict(QWEN_IDS, audio_token_id=247, audio_start_token_id=245, audio_end_token_id=246)
OMNI_IDS.update(user_token_id=244)


def family(prefix: str, text: dict, vision: dict, top: dict, **fields) -> dict:
    """A SPECS entry: the model and config classes ``{prefix}ForConditionalGeneration`` and
    ``{prefix}Config``, the text, vision and top-level config keywords, and ``fields``."""
    model = f"{prefix}ForConditionalGeneration"
    return dict(model=model, config=f"{prefix}Config", text=text, vision=vision, top=top, **fields)


# One entry per family (a `transformers/models/<family>` that has a `get_rope_index`).
#   model / config:  class names in `transformers`
#   text / vision / top:  config kwargs; `top` holds the token ids and any other top-level field
#                    or sub-config
# Optional:
#   wrap:            config attribute names of the tokens around the image pads (None: no
#                    wrapper); by default
#                    vision_start/end_token_id, else image_start/end_token_id
#   n_image_tokens:  f(t, h, w) on the merged grid -> number of image pads; default t * h * w
#   pixels:          "flat" (num_patches, C * temporal_patch * p * p), default, or "patches"
#                    (num_patches, C, p, p)
#   inputs:          name of a custom input builder in INPUT_BUILDERS
#   rotary_kwargs:   extra arguments of the text rotary's forward
SPECS = {
    # contiguous, sum = head_dim/2
    "qwen2_vl": family("Qwen2VL", text_kwargs(sections=(2, 3, 3)), QWEN2_VISION, QWEN_IDS),
    "qwen2_5_vl": family(
        "Qwen2_5_VL",
        text_kwargs(sections=(2, 3, 3)),
        qwen_vision(window_size=16, fullatt_block_indexes=[0]),
        QWEN_IDS,
    ),
    "qwen3_vl": family(
        "Qwen3VL",
        text_kwargs(**QWEN3_TEXT),  # interleaved
        dict(QWEN3_VISION, deepstack_visual_indexes=[0]),
        QWEN_IDS,
    ),
    "qwen3_vl_moe": family(
        "Qwen3VLMoe",
        text_kwargs(**QWEN3_TEXT, **QWEN3_MOE),
        dict(QWEN3_VISION, deepstack_visual_indexes=[0]),
        QWEN_IDS,
    ),
    "qwen3_5": family("Qwen3_5", text_kwargs(**QWEN3_5_TEXT), QWEN3_VISION, QWEN_IDS),
    "qwen3_5_moe": family(
        "Qwen3_5Moe",
        text_kwargs(**QWEN3_5_TEXT, **QWEN3_MOE, shared_expert_intermediate_size=32),
        QWEN3_VISION,
        QWEN_IDS,
    ),
    "qwen2_5_omni": family(
        "Qwen2_5OmniThinker",
        text_kwargs(sections=(2, 3, 3)),
        qwen_vision(window_size=16, fullatt_block_indexes=[0]),
        dict(OMNI_IDS, audio_config=OMNI_AUDIO),
    ),
    "qwen3_omni_moe": family(
        "Qwen3OmniMoeThinker",
        text_kwargs(**QWEN3_TEXT, **QWEN3_MOE),
        dict(QWEN3_VISION, deepstack_visual_indexes=[0]),
        dict(OMNI_IDS, audio_config=dict(OMNI_AUDIO, downsample_hidden_size=16)),
    ),
    "glm4v": family("Glm4v", text_kwargs(**GLM_TEXT), GLM_VISION, GLM_IDS),
    "glm46v": family("Glm46V", text_kwargs(**GLM_TEXT), GLM_VISION, GLM_IDS),
    "glm4v_moe": family(
        "Glm4vMoe",
        text_kwargs(
            **GLM_TEXT,
            n_routed_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            first_k_dense_replace=1,
        ),
        GLM_VISION,
        GLM_IDS,
    ),
    "glm_ocr": family("GlmOcr", text_kwargs(**GLM_TEXT), GLM_VISION, GLM_IDS),
    "cosmos3_omni": family(  # Qwen3-VL text + vision sub-configs
        "Cosmos3Omni",
        text_kwargs(**QWEN3_TEXT),
        dict(QWEN3_VISION, deepstack_visual_indexes=[0]),
        QWEN_IDS,
    ),
    "cohere_compass": family(  # per-layer-type RoPE: rotary(x, position_ids, layer_type)
        "CohereCompass",
        text_kwargs(
            head_dim=32,
            heads=2,
            kv_heads=1,
            layer_types=["sliding_attention", "full_attention"],
            sliding_window=8,
            rope_parameters={
                "sliding_attention": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "mrope_section": [6, 5, 5],
                },
                "full_attention": {
                    "rope_type": "default",
                    "rope_theta": 10000.0,
                    "mrope_section": [6, 5, 5],
                },
            },
        ),
        dict(QWEN3_VISION, deepstack_visual_indexes=[0]),
        QWEN_IDS,
        rotary_kwargs=dict(layer_type="full_attention"),
    ),
    "cosmos3_edge": family(  # SigLIP2 tower: flat (C * p * p) patches, no temporal patch
        "Cosmos3Edge",
        text_kwargs(
            **QWEN3_TEXT,
            hidden_act="relu2",
        ),
        vit(num_patches=16, spatial_merge_size=2),
        dict(QWEN_IDS, projector_hidden_size=64),
    ),
    "ernie4_5_vl_moe": family(  # sections are (h, w, t); flat (C * p * p) patches
        "Ernie4_5_VLMoe",
        text_kwargs(
            sections=(3, 3, 2),
            moe_num_experts=4,
            moe_k=2,
            moe_num_shared_experts=1,
            moe_intermediate_size=[32, 32],
        ),
        blocks(spatial_merge_size=2, temporal_merge_size=2),
        GLM_IDS,
    ),
    "paddleocr_vl": family(  # pixel_values as (num_patches, C, p, p)
        "PaddleOCRVL",
        text_kwargs(sections=(2, 3, 3)),
        vit(image_size=16, spatial_merge_size=2),
        QWEN_IDS,
        pixels="patches",
    ),
    # XD-RoPE: 4 axes (text, w, h, image index); one newline token per merged row, + 2
    "hunyuan_vl": family(
        "HunYuanVL",
        text_kwargs(sections=(2, 2, 2, 2)),
        vit(**HUNYUAN_VISION, text_hidden_size=64),
        dict(image_token_id=IMG, im_start_id=START, im_end_id=END, im_newline_id=NEWLINE),
        wrap=("im_start_id", "im_end_id"),
        n_image_tokens=lambda t, h, w: h * (w + 1) + 2,
    ),
    # MLA: rotary on qk_rope_head_dim; one newline token per merged row; no wrappers
    "hy_v4_vl": family(
        "HYV4VL",
        text_kwargs(
            heads=2,
            sections=(3, 3, 2),
            q_lora_rank=32,
            kv_lora_rank=16,
            qk_nope_head_dim=16,
            qk_rope_head_dim=16,
            v_head_dim=16,
            n_routed_experts=4,
            num_experts_per_tok=2,
            moe_intermediate_size=32,
            index_topk=8,
            index_head_dim=16,
            index_n_heads=2,
            hc_mult=2,
        ),
        vit(**HUNYUAN_VISION),
        dict(image_token_id=IMG, video_token_id=VID),
        wrap=None,
        n_image_tokens=lambda t, h, w: t * h * (w + 1),
    ),
    "qwen4_exp": family(
        "Qwen4Exp",
        text_kwargs(
            **dict(QWEN3_5_TEXT, layer_types=["linear_attention", "indexed_attention"]),
            **QWEN3_MOE,
            **INDEXER,
        ),
        QWEN3_VISION,
        QWEN_IDS,
    ),
    # image-to-image: VQ codes replace the image pads; a target grid follows the source grids
    "glm_image": family(
        "GlmImage",
        text_kwargs(
            **GLM_TEXT,
            vision_vocab_size=128,
            pad_token_id=0,
            eos_token_id=2,
        ),
        blocks(image_size=32, spatial_merge_size=1),
        dict(
            image_token_id=IMG,
            image_start_token_id=START,
            image_end_token_id=END,
            vq_config=dict(embed_dim=16, num_embeddings=64, latent_channels=32),
        ),
        inputs="glm_image",
    ),
    # canvas M-RoPE on Qwen3.5 text; NaViT-packed pixels + target_sizes (no image_grid_thw)
    "minicpmv4_7": family(
        "MiniCPMV4_7",
        text_kwargs(**QWEN3_5_TEXT),
        vit(image_size=32),
        MINICPM_IDS,
        inputs="minicpmv4_7",
    ),
}


def build(spec):
    """``(config, model)``: the family's tiny random model in eval mode."""
    config_cls = getattr(transformers, spec["config"])
    model_cls = getattr(transformers, spec["model"])
    config = config_cls(text_config=spec["text"], vision_config=spec["vision"], **spec["top"])
    torch.manual_seed(0)
    model = model_cls(config).eval()
    return config, model


def build_inputs(config, spec, grid=(1, 4, 6)):
    """input_ids = text, <start>, image pads, <end>, text; plus pixel_values and image_grid_thw.

    `grid` is (t, h, w) in patches before the spatial merge, as `image_grid_thw` holds it.
    """
    vc = config.vision_config
    merge = vc.spatial_merge_size
    t, h, w = grid
    count = spec.get("n_image_tokens", lambda t, h, w: t * h * w)
    n_image_tokens = count(t, h // merge, w // merge)
    wrap = spec.get("wrap", "default")
    if wrap == "default":
        names = ("vision_start_token_id", "vision_end_token_id")
        wrap = (
            names if hasattr(config, names[0]) else ("image_start_token_id", "image_end_token_id")
        )
    start, end = ([getattr(config, name)] for name in wrap) if wrap else ([], [])
    ids = [5, 6, 7] + start + [config.image_token_id] * n_image_tokens + end + [8, 9, 10, 11, 12]
    channels = getattr(vc, "in_channels", None) or vc.num_channels
    p = vc.patch_size
    torch.manual_seed(1)
    if spec.get("pixels", "flat") == "flat":
        pixel_values = torch.randn(
            t * h * w, channels * getattr(vc, "temporal_patch_size", 1) * p * p
        )
    else:
        pixel_values = torch.randn(t * h * w, channels, p, p)
    return _inputs(ids, config.image_token_id, pixel_values, image_grid_thw=torch.tensor([grid]))


def _inputs(ids, image_token_id, pixel_values, **more):
    """The forward's inputs: ``ids`` as a batch of one, its attention mask, which tokens are
    image pads (``mm_token_type_ids``; ``image_token_id`` None: the model takes none), the
    pixels and ``more``."""
    input_ids = torch.tensor([ids])
    found = dict(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **more)
    if image_token_id is not None:
        found["mm_token_type_ids"] = (input_ids == image_token_id).int()
    return dict(found, pixel_values=pixel_values)


def build_glm_image_inputs(config, spec, grid=(1, 4, 6), target_grid=(1, 2, 2)):
    """GLM-Image: <image_start> pads <image_end> per source image; image_grid_thw ends with
    the target grid."""
    t, h, w = grid
    ids = [5, 6, 7, config.image_start_token_id] + [config.image_token_id] * (t * h * w)
    ids += [config.image_end_token_id, 8, 9, 10, 11, 12, config.image_start_token_id]
    vc = config.vision_config
    torch.manual_seed(1)
    pixel_values = torch.randn(t * h * w, vc.in_channels * vc.patch_size**2)
    return _inputs(ids, None, pixel_values, image_grid_thw=torch.tensor([grid, target_grid]))


def build_minicpmv4_7_inputs(config, spec, size=(8, 12)):
    """MiniCPM-V 4.7: <image> pads </image>; "16x" mode merges 4x4 patches into one token."""
    h, w = size
    ids = [5, 6, 7, config.image_start_id] + [config.image_token_id] * ((h // 4) * (w // 4))
    ids += [config.image_end_id, 8, 9, 10, 11, 12]
    vc = config.vision_config
    torch.manual_seed(1)
    # NaViT packing: the h * w patches side by side, (1, C, p, h * w * p)
    pixel_values = torch.randn(1, vc.num_channels, vc.patch_size, h * w * vc.patch_size)
    return _inputs(ids, config.image_token_id, pixel_values, target_sizes=torch.tensor([size]))


INPUT_BUILDERS = {"glm_image": build_glm_image_inputs, "minicpmv4_7": build_minicpmv4_7_inputs}


def accepted(fn, kwargs):
    params = inspect.signature(fn).parameters
    return {k: v for k, v in kwargs.items() if k in params}


def find_rope_index_owner(model):
    for owner in (model.model, model):
        if hasattr(owner, "get_rope_index"):
            return owner
    raise AttributeError("no get_rope_index")


def find_text_rotary(model):
    found = [
        (name, mod)
        for name, mod in model.named_modules()
        if type(mod).__name__.endswith("RotaryEmbedding")
        and not any(part in name for part in ("visual", "vision", "audio"))
    ]
    assert len(found) == 1, [n for n, _ in found]
    return found[0]


def rope_ids(model, inputs):
    """The model's own position ids for ``inputs`` (its ``get_rope_index``), and the inputs
    its forward takes."""
    owner = find_rope_index_owner(model)
    with torch.no_grad():
        position_ids, _ = owner.get_rope_index(**accepted(owner.get_rope_index, inputs))
    return position_ids, accepted(model.forward, inputs)


def families():
    """The families of SPECS this transformers has."""
    return [name for name, spec in SPECS.items() if hasattr(transformers, spec["model"])]
