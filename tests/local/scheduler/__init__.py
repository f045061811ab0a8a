"""The local scheduler: its placement rules as pure tables, and on a real cluster."""
