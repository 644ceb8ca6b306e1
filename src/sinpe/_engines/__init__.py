"""``sinpe._engines(config)``: each engine's reading of one model's RoPE, side by side. A tiny
twin of the config (every RoPE-bearing key kept, the rest shrunk) goes through each engine's
own loading path, in the engine's own interpreter, and the verdict core judges what it
builds: one ``EngineLine`` per engine (``sinpe engines CONFIG`` prints them). Importing this
package imports no engine. docs/engines.md, "Every engine side by side", has the details."""

from ._registry import ENGINES, Engine
from ._side import ABSENT, FAILED, EngineLine, EnginesReport, engines

__all__ = ["ABSENT", "ENGINES", "FAILED", "Engine", "EngineLine", "EnginesReport", "engines"]
