"""The API server's HTTP edge: connections and their bounds, deadlines, flow control, audit, faults."""
