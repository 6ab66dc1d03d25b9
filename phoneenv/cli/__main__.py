"""``python -m phoneenv.cli``: the command line."""

from phoneenv.cli import app

app(prog_name="phoneenv")
