"""Deployment layer: run files, energy reports, exporters and the ``neuroedge`` CLI."""
