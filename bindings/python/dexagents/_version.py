"""The package version (the C library it is made for has the same)."""
__version__ = "1.1.0"
