// The `longlink` command-line tool. Subcommands arrive with their issues.
print("longlink: no subcommands yet")
