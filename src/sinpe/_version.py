__version__ = "0.3.0"  # the one place the version is written
