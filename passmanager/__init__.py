"""The pass infrastructure: pass options (`options`, below the passes) and the pass manager
that builds pipelines by name and runs them with verification and the analysis cache
(`pipeline`, above the passes and their registry)."""
