"""Notebook execution without a front end for widgets: `headless(base)` makes a subclass of nbclient's
NotebookClient (or of a class built on it, such as nbgrader's Execute preprocessor) that plays no front end,
so what a widget draws goes to the cell's outputs. Shared by the notebook builder (`tools.notebooks`) and the
grader (`tools.classroom`), which otherwise do not import each other's modules in both directions."""
from __future__ import annotations

__all__ = ["headless"]


def headless(base):
    """A subclass of `base` (nbclient's NotebookClient, or one built on it such as nbgrader's Execute
    preprocessor) that plays no front end for widgets (see bwlab.tools.notebooks)."""

    class Headless(base):
        def on_comm_open_jupyter_widget(self, msg):
            # nbclient's handler for a widget's comm_open: returning no object leaves every widget,
            # Output widgets included, without a front-end double, so nothing is sent back to the kernel
            # and what a widget draws goes to the cell's outputs.
            return None

    Headless.__name__ = Headless.__qualname__ = f"Headless{base.__name__}"
    return Headless
