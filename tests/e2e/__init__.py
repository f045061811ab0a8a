"""End to end, as users run it: separate processes, the wheel, the examples, the command blocks of README and
``docs/``, the Kubeflow SDK and the JavaScript client, the chaos run."""
