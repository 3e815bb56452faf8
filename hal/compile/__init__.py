"""The compiler floor: from a Python function to what runs it as one unit on a device.

`trace` records the ops a function calls as a `graph.Graph`; `passes` fold, deduplicate,
lower and fuse it; `executable` replays it bound to a device without per-op dispatch;
`pipeline.compile` asks the backend first for its own executable; `jit` caches all that
per input signature. The eager core never imports this package.
"""
