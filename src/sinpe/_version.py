__version__ = "0.4.0"  # the one place the version is written
