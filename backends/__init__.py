"""In-tree backends; each registers through the `hal.backends` entry point group."""
