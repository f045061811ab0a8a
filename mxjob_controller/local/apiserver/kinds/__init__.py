"""Kind-specific strategies: defaults and server-set fields for the built-in kinds that have them."""
