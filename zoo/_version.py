"""The zoo's version, on its own: zoo.tune keys its files by it, and importing the package
for it would import everything (an import circle)."""

__version__ = "0.1.0"
