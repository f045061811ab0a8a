"""Protobuf, tables, discovery and OpenAPI, as kubectl and client-go read them."""
