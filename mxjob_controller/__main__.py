"""Allow ``python -m mxjob_controller``."""

from mxjob_controller.cli import main

main()
