"""`torchair.core`: `from npuir.torchair.core.utils import logger`, as in TorchAir."""
