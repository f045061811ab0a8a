"""The controllers inside the API server: garbage collection, namespaces, their work queue."""
