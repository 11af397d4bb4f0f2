from mini_harness.cli import cli

cli(prog_name="mini-harness")
