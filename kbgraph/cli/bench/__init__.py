"""``kbgraph bench …``: the benchmark commands, one module per kind — the write, search, traffic and
add-one-run micro benchmarks, the learning-loop simulation, online memory at scale, and the LLM path."""

from __future__ import annotations

import typer

from kbgraph.cli.bench import learning, llm, micro, online

bench_app = typer.Typer(help="Benchmarks: figures printed next to a baseline measured in the same run.",
                        no_args_is_help=True)


def register(app: typer.Typer) -> None:
    for register_commands in (micro.register, learning.register, online.register, llm.register):
        register_commands(bench_app)  # in this order under `kbgraph bench --help`
    app.add_typer(bench_app, name="bench")
