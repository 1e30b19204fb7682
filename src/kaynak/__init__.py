"""kaynak: search your own documents and quote the passage that answers."""

__version__ = "0.1.0"
