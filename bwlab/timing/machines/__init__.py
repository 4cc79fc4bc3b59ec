"""One module per GPU, each defining MACHINE (a `bwlab.timing.machine.Machine`)."""
