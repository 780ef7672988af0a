"""The command line: click commands that parse, call the library, and render with rich."""
