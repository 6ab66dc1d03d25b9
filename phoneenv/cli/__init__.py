"""The ``phoneenv`` command line, one module per command group.

``app`` is the Typer application (the ``phoneenv`` console script, ``python -m phoneenv`` and
``python -m phoneenv.cli``). Each group lives in its own module: :mod:`~phoneenv.cli.evaluate`
(``eval``), :mod:`~phoneenv.cli.tasks` (``tasks list|show|validate|stats``),
:mod:`~phoneenv.cli.propose` (``tasks propose``), :mod:`~phoneenv.cli.train`, :mod:`~phoneenv.cli.view`
(``view``, ``compare``), :mod:`~phoneenv.cli.farm`, :mod:`~phoneenv.cli.device`,
:mod:`~phoneenv.cli.validation` (``validate-devices``), :mod:`~phoneenv.cli.mcp`,
:mod:`~phoneenv.cli.traces`, :mod:`~phoneenv.cli.review`, :mod:`~phoneenv.cli.evolve`; what they
share is in :mod:`~phoneenv.cli.common`. The library never imports from this package
(``tests/test_import_graph.py``).
"""

from __future__ import annotations

from phoneenv.cli.common import App
from phoneenv.cli.device import device_app
from phoneenv.cli.evaluate import eval_cmd
from phoneenv.cli.evolve import evolve_app
from phoneenv.cli.farm import farm_app
from phoneenv.cli.mcp import mcp_app
from phoneenv.cli.propose import propose_cmd
from phoneenv.cli.review import review_app
from phoneenv.cli.tasks import tasks_app
from phoneenv.cli.traces import traces_app
from phoneenv.cli.train import train_app
from phoneenv.cli.validation import validate_devices_cmd
from phoneenv.cli.view import compare_cmd, view_cmd

__all__ = ["app"]

app = App(
    help="Gymnasium environments for mobile planner agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.command("eval")(eval_cmd)
app.add_typer(tasks_app, name="tasks")
tasks_app.command("propose")(propose_cmd)
app.add_typer(device_app, name="device")
app.command("validate-devices")(validate_devices_cmd)
app.add_typer(farm_app, name="farm")
app.command("view")(view_cmd)
app.command("compare")(compare_cmd)
app.add_typer(mcp_app, name="mcp")
app.add_typer(traces_app, name="traces")
app.add_typer(review_app, name="review")
app.add_typer(evolve_app, name="evolve")
app.add_typer(train_app, name="train")
