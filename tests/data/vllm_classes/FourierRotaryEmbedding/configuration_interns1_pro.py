# STAND-IN for the remote-code configuration file that an Intern-S1-Pro
# checkpoint ships (model_type "interns1_pro" is in neither transformers 5.19
# nor vLLM 0.32's config registry). Written for this prototype, not copied:
# it reuses transformers' Qwen3-VL-MoE config classes under the new
# model_type, because vLLM's InternS1ProForConditionalGeneration subclasses
# Qwen3VLForConditionalGeneration and reads the Qwen3-VL-MoE fields.
from transformers.models.qwen3_vl_moe.configuration_qwen3_vl_moe import (
    Qwen3VLMoeConfig,
    Qwen3VLMoeTextConfig,
    Qwen3VLMoeVisionConfig,
)


class InternS1ProTextConfig(Qwen3VLMoeTextConfig):
    model_type = "interns1_pro_text"


class InternS1ProVisionConfig(Qwen3VLMoeVisionConfig):
    model_type = "interns1_pro_vision"


class InternS1ProConfig(Qwen3VLMoeConfig):
    model_type = "interns1_pro"
    sub_configs = {"vision_config": InternS1ProVisionConfig, "text_config": InternS1ProTextConfig}
