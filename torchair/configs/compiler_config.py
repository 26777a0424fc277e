"""`torchair.configs.compiler_config.CompilerConfig`, at TorchAir's import path
(`npuir.frontends.torchair.configs.compiler_config`)."""

from __future__ import annotations

from npuir.frontends.torchair.configs.compiler_config import CompilerConfig

__all__ = ["CompilerConfig"]
