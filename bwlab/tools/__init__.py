"""Tooling that is not teaching code: the notebook builder/executor (`python -m bwlab.tools.notebooks`)."""
