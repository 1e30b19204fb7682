"""``python -m kaynak``: the same command line as ``kaynak``."""

from kaynak.cli import main

if __name__ == "__main__":
    main()
