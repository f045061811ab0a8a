"""Generic controller machinery (nothing MXNet-specific): API access, informers, work queues, expectations."""
