# STAND-IN for the remote-code configuration file shipped by the ERNIE-4.5-VL
# "-PT" checkpoints (model_type "ernie4_5_moe_vl", which neither
# transformers 5.19 nor vLLM 0.32's config registry knows). Written for this
# prototype, not copied: a flat PretrainedConfig whose vision_config is turned
# into a config object, which is what vLLM's ernie45_vl.py reads.
from transformers import PretrainedConfig


class DFNRopeVisionTransformerConfig(PretrainedConfig):
    model_type = "DFNRope_vision_transformer"
    base_config_key = "vision_config"


class Ernie4_5_VLMoEConfig(PretrainedConfig):
    model_type = "ernie4_5_moe_vl"
    sub_configs = {"vision_config": DFNRopeVisionTransformerConfig}

    def __init__(self, vision_config=None, **kwargs):
        if isinstance(vision_config, dict):
            vision_config = DFNRopeVisionTransformerConfig(**vision_config)
        self.vision_config = vision_config or DFNRopeVisionTransformerConfig()
        super().__init__(**kwargs)
