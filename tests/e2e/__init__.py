"""End to end, as users run it: separate processes, the wheel, the examples, README's flows, the Kubeflow SDK and the
JavaScript client, the chaos run."""
