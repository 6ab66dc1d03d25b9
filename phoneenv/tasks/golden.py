"""The suite's golden hash: SHA-256 of every task's JSON in suite order, joined by newlines.

``tests/test_suite.py::test_suite_golden_hash`` pins it, so any change to what the suite holds
(a template's draw, a world's record) shows up. After a change made on purpose, print the new
value and paste it into ``GOLDEN`` in that test::

    python -m phoneenv.tasks.golden
"""

from __future__ import annotations

import hashlib

from phoneenv.tasks import load_suite

__all__ = ["suite_hash"]


def suite_hash() -> str:
    """SHA-256 (hex) of ``"\\n".join(task.model_dump_json() for task in load_suite(generated=False))``:
    the templates' tasks, not the loop directory's generated ones."""
    text = "\n".join(t.model_dump_json() for t in load_suite(generated=False))
    return hashlib.sha256(text.encode()).hexdigest()


if __name__ == "__main__":
    print(suite_hash())
