"""Importable stand-ins for third-party plugins (a loader registered at run time), used by the tests."""
