"""The jupytext front matter a MyST chapter needs, for tests that write throwaway chapters."""

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""
