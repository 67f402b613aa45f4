"""The analysts' commands: a REST client of the hub (never its database), wired into
`blackwidow` by blackwidow.cli."""
