"""An example out-of-tree npuir pass (docs/writing-a-pass.md): `example-stream-balance`."""
