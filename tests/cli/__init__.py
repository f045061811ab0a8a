"""The command line (``mxjob_controller/cli/``) as a user runs it."""
