"""`npuir.frontends.torchair.core`: the logger behind `npuir.torchair.core.utils`."""
