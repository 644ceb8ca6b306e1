# STAND-IN for the remote-code configuration file of an openPangu-Embedded
# checkpoint (model_type "PanguEmbedded" is not known to transformers 5.19).
# Written for this prototype; plain PretrainedConfig carrying the JSON fields.
from transformers import PretrainedConfig


class PanguEmbeddedConfig(PretrainedConfig):
    model_type = "PanguEmbedded"
