"""Glue to HTCondor: node event logs, per-node submit descriptions, the reaper.

Every module here imports ``htcondor2`` lazily, inside the functions that need
it, so that importing the package stays cheap for the hooks.
"""
