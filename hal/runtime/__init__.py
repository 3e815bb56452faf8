"""The runtime floor: backends, devices, memory, capabilities, the registry of plugins.

It knows no op and no graph: errors, dtypes, settings and host facts at the bottom, then
memory and capabilities, the Device and its Backend, and the registry that finds backends
through the `hal.backends` entry point group. Everything above (the op set, the eager
core, the compiler) builds on it; nothing here imports them.
"""
