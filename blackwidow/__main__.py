"""`python -m blackwidow` is the `blackwidow` command."""

from blackwidow.cli import main

main()
