"""The asynchronous units' instructions: the mbarrier, the TMA and bulk copies, wgmma, tcgen05.

Each module decodes its unit's instructions (rows of `bwlab.emu.isa.table`) and calls the one model of
the mechanism that the notebooks use; completions are scheduled on the launch's seeded clock
(`Launch.schedule`).
"""
