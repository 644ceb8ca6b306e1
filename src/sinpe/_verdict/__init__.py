"""The verdict core: what an engine or a file holds judged against the exact RoPE of a
config. ``judge`` owns coverage (every entry of a held table, a block at a time; a computed
RoPE at the core's positions) and the bounds; ``verdict`` every reason's words, the verdicts
and strict JSON; ``layers`` which layer's spec applies. Adapters hand over what they found
and never choose what is judged.
"""
