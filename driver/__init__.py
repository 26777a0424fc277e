"""What the tools run: programs end to end through pipelines, above the passes and frontends.

`npuir.driver.run` is the library behind `npuir-run`; the tools only parse arguments and
call it.
"""
