"""`torchair.configs`: `from npuir.torchair.configs.compiler_config import CompilerConfig`."""

from __future__ import annotations

from .compiler_config import CompilerConfig

__all__ = ["CompilerConfig"]
