"""`npuir.frontends.torchair.configs`: `CompilerConfig` (public as `npuir.torchair.configs`)."""

from __future__ import annotations

from .compiler_config import CompilerConfig

__all__ = ["CompilerConfig"]
