"""`python -m ragloom` runs the command line."""

from ragloom.cli import main

main()
