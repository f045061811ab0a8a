"""The store, its history, watches and list options."""
