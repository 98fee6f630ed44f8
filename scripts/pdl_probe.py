"""Programmatic dependent launch on and off, for the eager LLM suite (zoo bench --suite llm
--eager), side by side with torch.mm as always:
    python3 scripts/pdl_probe.py on|off OUT.json
on: the sm90 kernels launched with the programmatic-stream-serialization attribute (they
wait for the grid before them with griddepcontrol.wait); off: as shipped (KernelSpec.pdl)."""
import sys

from zoo import cli, cuda

mode, out = sys.argv[1], sys.argv[2]
if mode == "on":
    cuda.Function.pdl = property(lambda self: self.kernel_pdl or self.ctx["kernel"].startswith("sm90_"),
                                 lambda self, value: setattr(self, "kernel_pdl", value))
sys.exit(cli.main(["bench", "--suite", "llm", "--eager", "--json", out]))
