"""The pass manager, one layer above the passes: the registry that resolves pass names
(npuir's own, installed packages', loaded modules'), the pipeline builder and runner (with
verification and the analysis cache), and the universe that publishes npuir's dialects and
passes to a stock `xdsl-opt`.  What a pass author imports is `npuir.passes`, below the
passes."""
