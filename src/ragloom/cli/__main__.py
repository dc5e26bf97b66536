"""`python -m ragloom.cli`: the `ragloom` command."""

from ragloom.cli.app import main

if __name__ == "__main__":
    main()
