"""Isolation backends: one file each, all implementing :class:`sandbox.backends.base.SandboxBackend`."""
