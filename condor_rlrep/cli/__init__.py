"""The ``condor-rlrep`` command line: thin click shells over the library."""
