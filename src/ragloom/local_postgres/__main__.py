"""`python -m ragloom.local_postgres [start] FOLDER [--standbys N]`, `stop FOLDER`,
`status FOLDER`."""

from ragloom.local_postgres.command import main

main()
