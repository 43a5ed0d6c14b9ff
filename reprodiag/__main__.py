from reprodiag.cli import entry

entry()
