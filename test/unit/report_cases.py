"""The runs the trace and HTML report tests draw: the seed, the MoE example and a 2-rank
collective (a single-rank program, one with peers, and a collective across two ranks), timing only."""

from pathlib import Path

from npuir.driver.run import RunConfig

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

CASES: dict[str, RunConfig] = {
    "seed": RunConfig(path=str(EXAMPLES / "seed_multistream.mlir"), timing_only=True),
    "moe": RunConfig(path=str(EXAMPLES / "moe_decode.mlir"), mirror_peers=True, timing_only=True),
    "2-rank collective": RunConfig(
        path=str(EXAMPLES / "tp_decoder_decode.mlir"),
        ranks=2,
        mirror_peers=True,
        timing_only=True,
    ),
}
