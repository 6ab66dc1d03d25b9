"""``python -m phoneenv``: the ``phoneenv`` command line (how farm workers are started and restarted)."""

from phoneenv.cli import app

app(prog_name="phoneenv")
